"""The file to give spark-submit, which runs Python applications only from a `*.py` file:

    spark-submit --master yarn [options] "$(python -m kraftcheck.spark_submit)" \
        stats CORPUS... --out DIR [--graph ...] [--json]

runs `kraftcheck ARGS...` in the driver process spark-submit starts, so `kraftcheck stats`
takes the master and every setting from spark-submit (spark_trace_analysis.session leaves
them as given).  Run as a module (`python -m kraftcheck.spark_submit`) it prints its own
path, for the command line above.
"""

from __future__ import annotations

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


def main() -> None:
    from kraftcheck.cli import main as kraftcheck
    sys.argv[0] = "kraftcheck"
    kraftcheck()


if __name__ == "__main__":
    if os.environ.get("PYSPARK_GATEWAY_PORT"):     # started by spark-submit: run kraftcheck
        # spark-submit put this file's folder first on sys.path; its modules (cli, fuzz,
        # tlc/, ...) must not shadow top-level packages of the same name
        sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
        main()
    else:
        print(os.path.abspath(__file__))
