"""The one way the plotting scripts (plot_campaign.py, plot_sweep.py) write a PNG: under a
temporary name, then renamed into place, so a failure (a full disk, a quota) leaves
neither a partial PNG nor the temporary file; the script then exits 4 naming the file
and the cause."""
import errno
import os
import sys


def save(fig, target, **kwargs):
    tmp = target + ".tmp.png"
    try:
        fig.savefig(tmp, **kwargs)
        os.replace(tmp, target)
    except OSError as e:
        try:
            os.remove(tmp)
        except OSError:
            pass
        why = "disk full" if e.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG) else e.strerror
        print(f"cannot write {target}: {why}", file=sys.stderr)
        sys.exit(4)
