"""The layouts `xling export --format NAME` writes and `xling push --format NAME` uploads, one module each
(registered in `xling.exporting.LAYOUTS`). Each module has

    export(options: ExportOptions, workspace: Workspace) -> str    # write options.target; how it loads
    push_folder(options: PushOptions, staging: Path) -> tuple[Path, dict[str, str]]    # what to upload, files over it

(`xling`, the adapter folder as xling saves it, is pushed only). A new layout is its module and one entry."""
