import importlib
import os
import pkgutil
import sys

import django


def main(argv: list[str]) -> int:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
    django.setup()
    import tests.bench as package

    names = sorted(
        m.name.removeprefix("bench_") for m in pkgutil.iter_modules(package.__path__) if m.name.startswith("bench_")
    )
    wanted = [a for a in argv if a] or names
    unknown = [w for w in wanted if w not in names]
    if unknown:
        print(f"unknown benchmark(s): {', '.join(unknown)}; available: {', '.join(names)}", file=sys.stderr)
        return 2
    for name in wanted:
        module = importlib.import_module(f"tests.bench.bench_{name}")
        for key, value in module.run().items():
            print(f"{key}={value:.3f}" if isinstance(value, float) else f"{key}={value}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
