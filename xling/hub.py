"""The Hugging Face Hub: `xling push`, and `hf:ORG/NAME` adapter names.

`push` uploads an adapter directory as one commit, its model card (`xling.cards`) naming the repository, in
xling's own layout or in the one the `adapters` library's `load_adapter("ORG/NAME")` reads (`--format adapterhub`);
`download` fetches one into the Hub's usual cache (`HF_HOME`), from where it loads like any directory.
The token comes from where `huggingface_hub` looks (`HF_TOKEN`, `hf auth login`).
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from huggingface_hub import CommitOperationAdd, HfApi, snapshot_download
from huggingface_hub.errors import HfHubHTTPError

from xling import __version__
from xling.adapters.files import CONFIG_FILE
from xling.cards.adapter import LAYOUTS, model_card
from xling.cards.common import CARD_FILE
from xling.errors import XlingError, is_network_error
from xling.models.loading import DEFAULT_MODEL, MODEL_HELP
from xling.options import opt
from xling.paths import WORKSPACE_HELP
from xling.reports import read_report
from xling.roles import TASK_FILE, task_record


def _hub_error(err: Exception, what: str) -> Exception:
    """One line for the Hub's refusals and for a server out of reach; any other error as it is."""
    if isinstance(err, (HfHubHTTPError, OSError, ValueError)) or is_network_error(err):
        return XlingError(f"{what}: {(str(err).splitlines() or [type(err).__name__])[0]}")
    return err


def download(spec: str) -> Path:
    """The local directory of adapter `hf:ORG/NAME[@REVISION]`, fetched into the Hub cache if need be."""
    repo_id, _, revision = spec.removeprefix("hf:").partition("@")
    if repo_id.count("/") != 1 or not all(repo_id.split("/")):
        raise XlingError(f"{spec!r} is not a Hub adapter name: write hf:ORG/NAME (or hf:ORG/NAME@REVISION)")
    try:
        return Path(snapshot_download(repo_id, revision=revision or None))
    except Exception as err:
        raise _hub_error(err, f"cannot fetch {spec} from the Hub") from None


@dataclass
class PushOptions:
    adapter: str = opt(help="A trained adapter, task or fusion: a workspace name or a directory.", argument=1)
    repo_id: str = opt(help="The Hub model repository, ORG/NAME (created if new).", argument=2)
    private: bool = opt(False, "Create the repository private.")
    token: str | None = opt(None, "Hub token (default: HF_TOKEN, else the one `hf auth login` saved).")
    format: str = opt(
        "xling",
        "xling: xling's own files (hf:ORG/NAME in xling); adapterhub: the layout the adapters library's "
        'load_adapter("ORG/NAME") reads (xling reads it too).',
        choices=LAYOUTS,
    )
    model: str = opt(DEFAULT_MODEL, MODEL_HELP)
    workspace: str | None = opt(None, WORKSPACE_HELP)


def push(directory: Path, repo_id: str, private: bool = False, token: str | None = None, layout: str = "xling") -> str:
    """Upload an adapter directory to model repository `repo_id` (created if new) in `layout`, its card naming the
    repository; returns the commit's URL."""
    directory = Path(directory)
    if not (directory / CONFIG_FILE).is_file() and not (directory / TASK_FILE).is_file():
        raise XlingError(f"{directory} is not an adapter xling saved (no {CONFIG_FILE} or {TASK_FILE})")
    card = model_card(read_report(directory), repo_id, layout)
    api, name = HfApi(token=token), directory.name
    with tempfile.TemporaryDirectory() as staging:
        if layout == "adapterhub":
            from xling.adapters.adapterhub import export_adapterhub

            # the task's record travels beside the library's files (which it ignores), so xling reads it as a task
            directory = export_adapterhub(directory, Path(staging) / name, extra_files=task_record(directory))
        files = sorted(p for p in directory.rglob("*") if p.is_file() and p.name != CARD_FILE)
        operations = [CommitOperationAdd(str(p.relative_to(directory)), str(p)) for p in files]
        operations.append(CommitOperationAdd(CARD_FILE, card.encode("utf-8")))
        try:
            api.create_repo(repo_id, private=private, exist_ok=True)
            commit = api.create_commit(repo_id, operations, commit_message=f"Upload {name} (xling {__version__})")
        except Exception as err:
            raise _hub_error(err, f"cannot push to {repo_id}") from None
    return commit.commit_url
