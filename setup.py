"""Package-dir mapping for the design-card layout.

The library lives in ``src/paravt`` while ``kernels/`` and ``cli/`` stay at the top level of the
repository; they install as the subpackages ``paravt.kernels`` and ``paravt.cli``. Subpackages are
discovered here so that adding a folder never needs a pyproject edit.
"""

from setuptools import find_packages, setup

packages = ["paravt." + p for p in find_packages("src/paravt")] + ["paravt"]
package_dir = {"paravt": "src/paravt"}
for top in ("kernels", "cli"):
    packages.append(f"paravt.{top}")
    package_dir[f"paravt.{top}"] = top
    for sub in find_packages(top):
        packages.append(f"paravt.{top}.{sub}")
        package_dir[f"paravt.{top}.{sub}"] = f"{top}/{sub.replace('.', '/')}"

setup(packages=sorted(set(packages)), package_dir=package_dir)
