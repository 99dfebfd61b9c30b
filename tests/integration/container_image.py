"""A local Debian image with python3 in root podman storage, and how to run podman on this host.

Tests must not depend on a registry, so the image is built from a Debian mirror with mmdebstrap
and imported; later calls find it in podman storage and return at once.
"""

import fcntl
import os
import shutil
import subprocess
import tempfile

DEFAULT_IMAGE = "localhost/det-test-python:bookworm-2"
# A program only the image has: a trial that runs it proves it ran inside.
IMAGE_ONLY_PYTHON = "det-image-python3"
# Shared by every test process on the host, so concurrent builders wait for one another.
LOCK_FILE = "/tmp/det-test-container-image.lock"
CONTAINERS_CONF = "/tmp/det-test-containers.conf"


def podman_command():
    """The argv prefix for podman here. runc is named because crun, podman's preferred runtime
    where installed, fails as root on this host's hybrid cgroups ("cgroups in hybrid mode not
    supported")."""
    return ["podman", "--runtime", "runc"]


def podman_env():
    """os.environ plus CONTAINERS_CONF naming a containers.conf without default ulimits: podman's
    defaults make the runtime call setrlimit, which fails without CAP_SYS_RESOURCE."""
    conf = "[containers]\ndefault_ulimits = []\n"
    # Write to a private name and rename, so a concurrent reader never sees a partial file.
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(CONTAINERS_CONF), prefix=".containers-conf-")
    with os.fdopen(fd, "w") as f:
        f.write(conf)
    os.chmod(tmp, 0o644)
    os.replace(tmp, CONTAINERS_CONF)
    return dict(os.environ, CONTAINERS_CONF=CONTAINERS_CONF)


def _image_exists(name, env):
    return subprocess.run(podman_command() + ["image", "exists", name], env=env).returncode == 0


def ensure_python_image(name=DEFAULT_IMAGE):
    """The name of an image with /bin/bash, python3 and IMAGE_ONLY_PYTHON, built on first use
    (about 20 s)."""
    env = podman_env()
    if _image_exists(name, env):
        return name
    with open(LOCK_FILE, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        # Another process may have built it while this one waited for the lock.
        if _image_exists(name, env):
            return name
        work = tempfile.mkdtemp(prefix="det-test-image-", dir="/tmp")
        try:
            tar = os.path.join(work, "rootfs.tar")
            subprocess.run(["mmdebstrap", "--quiet", "--variant=apt", "--include=python3",
                            f'--customize-hook=ln -s /usr/bin/python3 "$1/usr/local/bin/{IMAGE_ONLY_PYTHON}"',
                            "bookworm", tar], check=True)
            # An imported tarball has no config; give it a command so `podman run IMAGE` works.
            subprocess.run(podman_command() + ["import", "--quiet", "--change", 'CMD=["/bin/bash"]', tar,
                            name], env=env, check=True, stdout=subprocess.DEVNULL)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return name


if __name__ == "__main__":
    print(ensure_python_image())
