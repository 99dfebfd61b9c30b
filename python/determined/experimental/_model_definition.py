"""A model directory as the tar archive det's master takes (what `det submit CONFIG DIR` sends)."""

import io
import os
import pathlib
import tarfile
from typing import Iterable, Optional, Union


def packed(model_dir: Optional[str], includes: Optional[Iterable[Union[str, pathlib.Path]]]) -> bytes:
    """The files under `model_dir` (relative to it, links followed) and each of `includes` (a file
    or a directory, under its own name), as one archive; b"" when there are none."""
    if model_dir is None and not includes:
        return b""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT, dereference=True) as tar:
        if model_dir is not None:
            if not os.path.isdir(model_dir):
                raise ValueError(f"model_dir {model_dir} is not a directory")
            for name in sorted(os.listdir(model_dir)):
                tar.add(os.path.join(model_dir, name), arcname=name)
        for include in includes or []:
            path = pathlib.Path(include)
            if not path.exists():
                raise ValueError(f"the include {include} does not exist")
            tar.add(str(path), arcname=path.resolve().name)
    return out.getvalue()
