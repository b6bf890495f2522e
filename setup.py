"""The build's one step beyond pyproject.toml: the corpora catalogue, kept at the top of the repository
(`corpora/catalog.toml`), goes into the package, so that an installed xling reads the same file."""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

CATALOG = "corpora/catalog.toml"


class BuildWithCatalogue(build_py):
    def run(self):
        super().run()
        if not self.editable_mode:  # an editable install reads corpora/ where it is
            target = Path(self.build_lib) / "xling" / "data" / "catalog.toml"
            target.parent.mkdir(parents=True, exist_ok=True)
            self.copy_file(CATALOG, str(target))


setup(cmdclass={"build_py": BuildWithCatalogue})
