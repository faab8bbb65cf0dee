# Package discovery lives here because the shipped data folders (devices/, kernels_spec/) sit at the top of
# the repository and are mapped into the data packages named in pyproject.toml's [tool.setuptools.package-dir].
from setuptools import find_packages, setup

setup(packages=find_packages(include=["perfmodel", "perfmodel.*"])
      + ["perfmodel_shipped.devices", "perfmodel_shipped.kernels_spec"])
