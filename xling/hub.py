"""The Hugging Face Hub: what `xling push` uploads, and `hf:ORG/NAME` adapter names.

`upload` sends a folder as one commit with its model card (`xling.exporting` stages it in the layout asked for);
`download` fetches one into the Hub's usual cache (`HF_HOME`), from where it loads like any directory.
The token comes from where `huggingface_hub` looks (`HF_TOKEN`, `hf auth login`).
"""

from __future__ import annotations

import os
from pathlib import Path

from huggingface_hub import CommitOperationAdd, HfApi, snapshot_download
from huggingface_hub.errors import HfHubHTTPError

from xling import __version__
from xling.errors import XlingError, first_line, is_network_error
from xling.paths import cache_dir


def _hub_error(err: Exception, what: str) -> Exception:
    """One line for the Hub's refusals and for a server out of reach; any other error as it is."""
    if isinstance(err, (HfHubHTTPError, OSError, ValueError)) or is_network_error(err):
        return XlingError(f"{what}: {first_line(err)}")
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


def upload(
    directory: Path, repo_id: str, written: dict[str, str], private: bool = False, token: str | None = None
) -> str:
    """Upload the files of `directory`, those named in `written` replaced by its texts (a model card naming the
    repository), to model repository `repo_id` (created if new) as one commit; returns the commit's URL."""
    found = sorted(Path(directory).rglob("*"))
    if links := [p for p in found if p.is_symlink()]:  # a link would upload what it points to, anywhere
        named = ", ".join(str(p) for p in links[:3]) + (f" and {len(links) - 3} more" if len(links) > 3 else "")
        raise XlingError(f"{named}: symbolic links, which xling never uploads; replace them with the files")
    files = [p for p in found if p.is_file() and str(p.relative_to(directory)) not in written]
    # hf_xet keeps an upload cache and a log of every call under HF_HOME, in $HOME: a push's go where xling's do
    os.environ.setdefault("HF_XET_CACHE", str(cache_dir() / "xet"))
    api = HfApi(token=token)
    operations = [CommitOperationAdd(str(p.relative_to(directory)), str(p)) for p in files]
    operations += [CommitOperationAdd(name, text.encode("utf-8")) for name, text in written.items()]
    try:
        api.create_repo(repo_id, private=private, exist_ok=True)
        message = f"Upload {Path(directory).name} (xling {__version__})"
        return api.create_commit(repo_id, operations, commit_message=message).commit_url
    except Exception as err:
        raise _hub_error(err, f"cannot push to {repo_id}") from None
