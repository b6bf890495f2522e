"""`xling_adapter.json`, the record of an adapter folder xling saved, as a typed record (no torch here): what
was saved (kind, name, its config, a fusion's adapters), by which xling, for which base model, and what the
saving command said of it (`metadata`). Every reader takes its fields from `AdapterRecord.read`."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from xling import __version__
from xling.errors import XlingError
from xling.fileio import read_json, write_json_atomic
from xling.options import shown
from xling.records import from_record
from xling.roles import FUSION, LANG, TASK, Role


@dataclass
class ModelFingerprint:
    """What identifies a base model (`adapters.weights.base_model_fingerprint`): its shape, and a hash of part of
    its embedding matrix. A value a record lacks is None."""

    architecture: str | None = None  # Transformers' model_type
    hidden_size: int | None = None
    num_layers: int | None = None
    vocab_size: int | None = None
    embedding_sha256: str | None = None

    def shape(self, where: str) -> ModelFingerprint:
        """This fingerprint, refused in one line where it lacks the shape an export writes from it."""
        if None in (self.architecture, self.hidden_size, self.num_layers):
            raise XlingError(
                f"{where}: its base model's architecture, width or layers are missing (the file is damaged)"
            )
        return self


@dataclass
class BaseModelRecord:
    """The base model an adapter was trained on: its name as loaded, and the fingerprint of its weights that
    loading checks (`adapters.weights.check_base_model`)."""

    name: str
    fingerprint: ModelFingerprint
    hub_id: str | None = None  # the Hub model it is (ModelIdentity.hub_id); unset in records before it was kept


@dataclass
class AdapterMetadata:
    """What the saving command said of the adapter. Files were written with three shapes, all read here: a
    language adapter's `{"role": "language"}`, a task adapter's `{"role": "task", "task", "lang"}` and a
    fusion's `{"task", "lang", "name"}`."""

    role: str | None = None  # a role's word: "language", "task"
    task: str | None = None
    lang: str | None = None
    name: str | None = None
    over_lang_adapter: bool | None = None  # a fusion: trained over a language adapter (None: saved before it said)


@dataclass
class AdapterRecord:
    kind: str  # an adapter kind (`adapters.registry.KINDS`), "fusion" or "head"
    name: str
    xling_version: str
    base_model: BaseModelRecord
    config: dict | None = None  # an adapter's or fusion's settings
    adapters: list[str] | None = None  # a fusion's adapters
    metadata: AdapterMetadata = field(default_factory=AdapterMetadata)

    @classmethod
    def made(cls, kind: str, name: str, base_model: BaseModelRecord, **settings) -> AdapterRecord:
        """The record of an adapter saved now, by this xling."""
        return cls(kind=kind, name=name, xling_version=__version__, base_model=base_model, **settings)

    @property
    def role(self) -> Role:
        """What the adapter is for, worked out here only: a fusion by its kind, a language adapter by what its
        saving command said, else a task adapter (or a head)."""
        if self.kind == "fusion":
            return FUSION
        return LANG if self.metadata.role == LANG.word else TASK

    def check_role(self, role: Role | None, where: str) -> None:
        """Refuse an adapter whose record says another role than `role`, or none (`role` None: any): a record
        that cannot say what it is for is never taken for what it may not be."""
        if role is None:
            return
        said = FUSION.word if self.kind == "fusion" else self.metadata.role  # a fusion's record says it by its kind
        if said is None:
            raise XlingError(f"{where} does not say what the adapter is for (no metadata.role): not a {role.title}")
        if said != role.word:
            raise XlingError(f"{where} is a {said} adapter, not a {role.title}: give a {role.title} here")

    @classmethod
    def read(cls, file: Path) -> AdapterRecord:
        """The record in `file`, its keys and types checked; one line naming the file otherwise."""
        data, where = read_json(file), str(file)
        if not isinstance(data, dict):
            raise XlingError(f"{where} is not an adapter config (a JSON object)")
        base = data.get("base_model")
        unknown = sorted(data.keys() - {f.name for f in fields(cls)}) + sorted(
            (base.keys() - {f.name for f in fields(BaseModelRecord)}) if isinstance(base, dict) else ()
        )
        if unknown:  # `auto_map`, `trust_remote_code`: not xling's
            raise XlingError(
                f"{where} has keys xling does not write ({', '.join(map(shown, unknown[:4]))}): not loaded"
            )
        if not isinstance(base, dict) or not isinstance(base.get("fingerprint"), dict):
            raise XlingError(f"{where} has no base-model fingerprint, so nothing tells which model it fits")
        for key, kind in NEEDED.items():
            if (key in data or key == "name") and not isinstance(data.get(key), kind):
                raise damaged(key, where)
        return from_record(cls, data, where)

    def settings(self, where: str) -> dict:
        """An adapter's or fusion's config, which its kind needs."""
        return self._needed("config", where)

    def fused(self, where: str) -> list[str]:
        """A fusion's adapters, which it needs."""
        return self._needed("adapters", where)

    def _needed(self, key: str, where: str):
        if getattr(self, key) is None:
            raise damaged(key, where)
        return getattr(self, key)

    def to_record(self) -> dict:
        """The JSON object written, keys in the order xling has always written them; unset ones left out."""
        written = {"kind": self.kind, "name": self.name}
        written |= {key: value for key in ("adapters", "config") if (value := getattr(self, key)) is not None}
        written |= {"xling_version": self.xling_version, "base_model": asdict(self.base_model)}
        metadata = {key: value for key, value in asdict(self.metadata).items() if value is not None}
        return written | ({"metadata": metadata} if metadata else {})

    def write(self, file: Path) -> None:
        write_json_atomic(file, self.to_record())


# the keys of a record that loading needs, by type: one refusal each, whether the key is absent or of another type
NEEDED = {"name": str, "config": dict, "adapters": list}


def damaged(key: str, where: str) -> XlingError:
    return XlingError(
        f"{where}: {key!r} is missing or not a {NEEDED[key].__name__} (the file is damaged; save it again)"
    )
