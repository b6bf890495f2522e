"""A recipe's TOML file read into a `Recipe`: its head and its steps, each step's keys kept as written."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from xling.data.catalog import tomllib
from xling.errors import XlingError
from xling.models.loading import DEFAULT_MODEL
from xling.names import file_name
from xling.options import check_type

RUN_LEVEL = {"model", "workspace", "overwrite", "restart"}  # set by the recipe and `xling run`, not by steps
COMMON_KEYS = {"title", "run"}  # a step's own keys; every other key is the command's option
STEPS_FILE = "steps.json"  # the options each step ran with, beside the results


@dataclass
class Step:
    number: int
    title: str
    run: str
    options: dict

    def where(self, file: str) -> str:
        return f"{file}: step {self.number} ({self.title})"


HEAD_KEYS = {"name": str, "model": str, "workspace": str, "description": str, "seeds": list[int]}


@dataclass
class Recipe:
    file: str
    name: str
    model: str = DEFAULT_MODEL
    workspace: str | None = None
    description: str = ""
    seeds: list[int] = field(default_factory=list)  # empty: one run, seeds as the steps say
    steps: list[Step] = field(default_factory=list)


def read_recipe(path: str | Path) -> Recipe:
    path = Path(path)
    if not path.is_file():
        raise XlingError(f"no recipe at {path}")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as err:
        raise XlingError(f"{path}: not valid TOML: {err}") from err
    except RecursionError:
        raise XlingError(f"{path}: nested too deeply (a recipe is tables of plain values)") from None
    except ValueError as err:  # an integer past Python's 4,300-digit limit
        raise XlingError(f"{path}: not valid TOML: {str(err).splitlines()[0][:120]}") from None
    head, raw_steps = data.get("recipe", {}), data.get("step", [])
    if not isinstance(head, dict):
        raise XlingError(f"{path}: `recipe` must be a table ([recipe] with name, model, ...), not {head!r}")
    if not isinstance(raw_steps, list) or not all(isinstance(s, dict) for s in raw_steps):
        raise XlingError(f"{path}: `step` must be a list of tables, each starting with [[step]]")
    unknown = set(data) - {"recipe", "step"} | set(head) - set(HEAD_KEYS)
    if unknown:
        raise XlingError(f"{path}: unknown keys {', '.join(sorted(unknown))}")
    try:
        fields = {key: check_type(key, head[key], hint) for key, hint in HEAD_KEYS.items() if key in head}
        steps = [
            Step(
                i,
                file_name(check_type("title", s.get("title", f"step-{i}"), str), "step title"),
                check_type("run", s.get("run", ""), str),
                {k: v for k, v in s.items() if k not in COMMON_KEYS},
            )
            for i, s in enumerate(raw_steps, start=1)
        ]
        name = file_name(fields.get("name", path.stem), "recipe name")
    except XlingError as err:
        raise XlingError(f"{path}: {err}") from None
    titles = [step.title for step in steps]
    if twice := sorted({title for title in titles if titles.count(title) > 1}):
        raise XlingError(f"{path}: step titles must differ (each names a result file): {', '.join(twice)}")
    if reserved := sorted(set(titles) & {Path(STEPS_FILE).stem, "results"}):
        raise XlingError(f"{path}: step title {reserved[0]!r} is the name of the recipe's own result file")
    return Recipe(str(path), name, **{k: v for k, v in fields.items() if k != "name"}, steps=steps)
