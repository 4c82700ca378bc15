"""Shape B: App and Image (issue 19's example, as written).

Builds a Debian bookworm image with Python 3.11 on first run. Under runsc,
snapshot_memory() needs a sandbox without a network interface: add
block_network=True to app.sandbox(...) there.
"""
from sbx import App, Image

app = App("agents")
sandbox = app.sandbox(image=Image(python_version="3.11"), cpu=1.0, memory=1024, keep_warm_seconds=600)
instance = sandbox.create()
try:
    result = instance.run("python3 --version")          # a shell command line
    print(result.exit_code, result.stdout)
    same = sandbox.connect(instance.sandbox_id())
    instance.update_ttl(1800)
    result = instance.run("ls", cwd="/workspace", timeout_seconds=300)
    snap = instance.snapshot_memory(); restored = sandbox.create_from_memory_snapshot(snap)
    image_id = instance.create_image_from_filesystem(); again = app.sandbox(image=Image.from_id(image_id)).create()
finally:
    instance.terminate()
