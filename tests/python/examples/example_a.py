# Shape A of issue 19, as written there.
from sbx import Blueprint, Sandbox
sandbox = Sandbox(cpu=1, memory="1Gi",
                  image=Blueprint(python_version="3.11", apt_packages=["python3-numpy"]),
                  keep_warm_seconds=600, block_network=True, authorized=True)
box = sandbox.create()
r = box.process.run_code("import numpy as np; print(np.arange(3).sum())")
print(r.result, r.exit_code)               # "3", 0
p = box.process.exec("python3", "-m", "http.server", "8000")
url = box.expose_port(8000)                # needs Authorization: Bearer <token> unless authorized=False
box.fs.write_text("/workspace/notes.md", "# hello")
box.terminate()
