import time
from tests.hostile.conftest import in_process
from dpscale.web.registry import calculators
def test_x(sqlite_url):
  with in_process() as c:
    base = calculators()["scaling-prediction"].defaults()
    for extra in ({}, {"devices": "1-100000"}, {"devices": "1-10000"}, {"devices": "1-2000"}, {"devices":"1-2000","algorithm":"auto"}, {"devices":"1..10000000"}):
      q = {**base, **extra, "bucket_size": "24 MiB"}
      for path in ("/api/v1/scaling-prediction", "/en/scaling-prediction", "/fragment/en/scaling-prediction", "/chart/en/scaling-prediction.svg"):
        t=time.perf_counter(); r = c.get(path, params=q); dt=time.perf_counter()-t
        q["bucket_size"] = q["bucket_size"].replace("24","23")  # defeat caches
        print(extra, path, r.status_code, f"{dt:.3f}s", len(r.content))
