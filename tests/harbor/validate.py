"""Validates skillscope's Harbor files with Harbor's own pydantic models (0.25 or 0.26, whichever
is on PYTHONPATH).

Usage: python validate.py [--require-lock] [--exact-locks] JOBS_DIR
Every job folder's result.json must load as harbor.models.job.result.JobResult and its
config.json as harbor.models.job.config.JobConfig; every trial folder's result.json as
harbor.models.trial.result.TrialResult, config.json as harbor.models.trial.config.TrialConfig,
lock.json (required with --require-lock) as harbor.models.job.lock.TrialLock, and
agent/trajectory.json (ATIF) as harbor.models.trajectories.trajectory.Trajectory. With
--exact-locks each lock.json must also be byte for byte what Harbor writes for the model it read
(`model_dump_json(indent=4, exclude_none=True)`, as `Trial._write_trial_lock` writes it). Prints
the Harbor version, one line per file, and `validated N files`; exits 1 on the first failure.
"""
import pathlib
import sys

from harbor.models.job.config import JobConfig
from harbor.models.job.lock import TrialLock
from harbor.models.job.result import JobResult
from harbor.models.trajectories.trajectory import Trajectory
from harbor.models.trial.config import TrialConfig
from harbor.models.trial.result import TrialResult


def harbor_version():
    import importlib.metadata

    try:
        return importlib.metadata.version("harbor")
    except importlib.metadata.PackageNotFoundError:
        # The unpacked wheel: its dist-info names the version.
        src = pathlib.Path(sys.modules["harbor"].__file__).parent.parent
        found = sorted(src.glob("harbor-*.dist-info"))
        return found[0].name.split("-")[1] if found else "unknown"


def check(model, path, exact=False):
    text = path.read_text()
    try:
        value = model.model_validate_json(text)
    except Exception as e:  # pydantic.ValidationError and JSON errors alike
        print(f"INVALID {model.__name__} {path}: {e}")
        sys.exit(1)
    if exact and value.model_dump_json(indent=4, exclude_none=True) != text:
        print(f"DIFFERS {model.__name__} {path}: not what Harbor writes for it")
        sys.exit(1)
    print(f"ok {model.__name__} {path}{' (exact)' if exact else ''}")


def main():
    args = sys.argv[1:]
    require_lock = "--require-lock" in args
    exact_locks = "--exact-locks" in args
    jobs = pathlib.Path([a for a in args if not a.startswith("--")][0])
    print(f"harbor {harbor_version()}")
    n = 0
    for job in sorted(p for p in jobs.iterdir() if p.is_dir()):
        check(JobResult, job / "result.json")
        check(JobConfig, job / "config.json")
        n += 2
        for trial in sorted(p for p in job.iterdir() if p.is_dir()):
            check(TrialResult, trial / "result.json")
            check(TrialConfig, trial / "config.json")
            n += 2
            lock = trial / "lock.json"
            if require_lock or lock.exists():
                if not lock.exists():
                    print(f"MISSING lock.json in {trial}")
                    sys.exit(1)
                check(TrialLock, lock, exact=exact_locks)
                n += 1
            if (trial / "agent" / "trajectory.json").exists():
                check(Trajectory, trial / "agent" / "trajectory.json")
                n += 1
    print(f"validated {n} files")


if __name__ == "__main__":
    main()
