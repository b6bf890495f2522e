"""Reading back what xling wrote (and what other programs wrote in its formats): every file is a typed record, a
dataclass read from its JSON object with each key and value type checked, and an error in one line naming the
file. A record class reads itself, `Cls.read(path)` (`Record` gives the plain one: `read_record(path, cls)`);
`read_records` for JSON lines, `from_record(cls, data, where)` for an object already parsed; `set_fields` is how a
record is written."""

from __future__ import annotations

import types
import typing
from collections.abc import Collection
from dataclasses import asdict, fields, is_dataclass
from pathlib import Path

from xling.errors import XlingError, naming
from xling.fileio import read_json, read_jsonl
from xling.options import check_type, is_required, matches, shown, type_hints


def typed(record: dict, key: str, hint, default, where: str):
    """`record[key]` of a file another program wrote (absent or null: `default`), checked against `hint`; an
    error names `where` and the key."""
    value = record.get(key)
    if value is None:
        return default
    with naming(where):
        return check_type(key, value, hint)


def set_fields(record, always: Collection[str] = ()) -> dict:
    """A dataclass record as the JSON object it is written as: its fields, those left unset (None) out unless
    named in `always`; a nested record (or a list of them) as its object."""
    values = {f.name: getattr(record, f.name) for f in fields(record)}
    return {key: _plain(value) for key, value in values.items() if value is not None or key in always}


def _plain(value):
    if is_dataclass(value):
        return asdict(value)
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return [_plain(item) for item in value] if isinstance(value, list) else value


def read_record(path: Path, cls: type):
    """The `cls` record a JSON file holds, its keys and types checked; one line naming the file otherwise."""
    return from_record(cls, read_json(Path(path)), str(path))


class Record:
    """A dataclass xling writes as one JSON file and reads back with `Cls.read(path)`; a record that reads
    differently (a folder, a file that may be absent) defines its own `read`."""

    @classmethod
    def read(cls, path: Path):
        return read_record(path, cls)


def read_records(path: Path, cls: type, damaged: list[str] | None = None) -> list:
    """The `cls` records of a JSON-lines file, each line's keys and types checked; a damaged line is one error
    naming the file and line, or, given `damaged`, skipped and named there (`fileio.read_jsonl`)."""
    return read_jsonl(Path(path), damaged, lambda value, where: from_record(cls, value, where))


def _without_none(hint):
    """`X` of an optional `X | None`; any other hint as it is."""
    if typing.get_origin(hint) not in (typing.Union, types.UnionType):
        return hint
    inner = [arg for arg in typing.get_args(hint) if arg is not type(None)]
    return inner[0] if len(inner) == 1 else hint


def nested_record(hint) -> type | None:
    """The dataclass a field holds (`Config`, or `Config | None`), read as a nested object; None for any other."""
    inner = _without_none(hint)
    return inner if is_dataclass(inner) else None


def nested_records(hint) -> type | None:
    """The dataclass of a field holding a list of them (`list[Record]`, or `list[Record] | None`); else None."""
    inner = _without_none(hint)
    if typing.get_origin(inner) is not list:
        return None
    (item,) = typing.get_args(inner)
    return item if is_dataclass(item) else None


def mapped_records(hint) -> type | None:
    """The dataclass of a field holding them by name (`dict[str, Record]`, or that or None); else None."""
    inner = _without_none(hint)
    if typing.get_origin(inner) is not dict:
        return None
    _, item = typing.get_args(inner)
    return item if is_dataclass(item) else None


def _field_value(key: str, value, hint, where: str):
    """A record's field from its JSON value: a nested record (a list of them, or them by name) read as its
    dataclass."""
    if value is None:
        return check_type(key, value, hint)
    if (record := nested_record(hint)) and not isinstance(value, record):  # an instance: as it is
        return from_record(record, value, f"{where}: {key}")
    if (item := nested_records(hint)) and isinstance(value, list):
        return [
            v if isinstance(v, item) else from_record(item, v, f"{where}: {key} {n}") for n, v in enumerate(value, 1)
        ]
    if (item := mapped_records(hint)) and isinstance(value, dict):
        return {
            name: v if isinstance(v, item) else from_record(item, v, f"{where}: {key} {name}")
            for name, v in value.items()
        }
    return check_type(key, value, hint)


def from_record(cls, data, where: str):
    """A config dataclass from a saved JSON record, its keys and value types checked: an error names `where`. A
    nested config is a nested object."""
    if not isinstance(data, dict):
        raise XlingError(f"{where}: expected a JSON object of {cls.__name__} settings, not {type(data).__name__}")
    hints, known = type_hints(cls), {f.name for f in fields(cls)}
    unknown = set(data) - known
    if unknown:
        raise XlingError(f"{where}: unknown settings {shown(', '.join(sorted(map(str, unknown))))}")
    if missing := [f.name for f in fields(cls) if is_required(f) and f.name not in data]:
        raise XlingError(f"{where}: missing settings {', '.join(missing)}")
    if unset := [key for key, value in data.items() if value is None and not matches(None, hints[key])]:
        raise XlingError(f"{where}: {', '.join(unset)} must be set, not null")
    with naming(where):
        return cls(**{key: _field_value(key, value, hints[key], where) for key, value in data.items()})
