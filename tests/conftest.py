import os

try:
    from hypothesis import HealthCheck, settings
except ImportError:  # the GPU machine's tests (benches/gpu/run.sh) use no hypothesis; the rest need it
    settings = None

if settings is not None:
    # "ci" (the default) explores more and has no per-example deadline: shared 2-core machines stall.
    settings.register_profile("ci", max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    settings.register_profile("dev", max_examples=50, deadline=None)
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
