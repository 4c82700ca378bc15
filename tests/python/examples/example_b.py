# Shape B of issue 19, as written there, but for block_network=True: this
# runsc checkpoints (snapshot_memory) only sandboxes without an interface.
from sbx import App, Image
app = App("agents")
sandbox = app.sandbox(image=Image(python_version="3.11"), cpu=1.0, memory=1024, keep_warm_seconds=600,
                      block_network=True)
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
