"""The kill-at-every-step harness: a forked child that SIGKILLs itself before its n-th change on disk."""

from __future__ import annotations

import os
import shutil
import signal

from tensordict.memmap import _fs


def kill_at(step: int, work) -> bool:
    """Runs ``work`` in a forked child that SIGKILLs itself before its ``step``-th change on disk.

    Every file or folder created, link, rename, exchange, unlink and tree removal counts
    as a change. Returns True when the child was killed, False when ``work`` finished in
    fewer steps.
    """
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        try:
            count = [0]

            def tick():
                count[0] += 1
                if count[0] == step:
                    os.kill(os.getpid(), signal.SIGKILL)

            def counted(function):
                def wrapper(*args, **kwargs):
                    tick()
                    return function(*args, **kwargs)

                return wrapper

            for module, name in [
                (os, "replace"),
                (os, "rename"),
                (os, "unlink"),
                (os, "rmdir"),
                (os, "mkdir"),
                (os, "link"),
                (shutil, "rmtree"),
                (_fs, "exchange"),
            ]:
                setattr(module, name, counted(getattr(module, name)))
            os_open = os.open

            def opened(path, flags, *args, **kwargs):
                if flags & os.O_CREAT:
                    tick()
                return os_open(path, flags, *args, **kwargs)

            os.open = opened
            work()
        except BaseException:
            os._exit(1)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        assert os.WTERMSIG(status) == signal.SIGKILL
        return True
    assert os.WEXITSTATUS(status) == 0, "the child failed"
    return False
