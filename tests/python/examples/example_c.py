# Shape C of issue 19, as written there (the loop body and the tunnel id
# filled in so that it runs).
import sbx
with sbx.Sandbox.create("busybox", timeout=300, runtime="runsc", block_network=True) as sb:
    proc = sb.exec("sh", "-c", "echo hello; exit 3")
    assert proc.wait() == 3 and proc.returncode == 3
    assert proc.stdout.read() == b"hello\n"
    proc = sb.exec("sh", "-c", "cat; echo done", stream=True, env={"K": "V"}, workdir="/tmp")
    proc.stdin.write(b"in\n"); proc.stdin.close()
    for line in proc.stdout: print(line)           # bytes, as they come
    sb.write_file("/work/data.txt", b"hello"); assert sb.read_file("/work/data.txt") == b"hello"
    page = sb.ls("/work", limit=200, cursor=None)   # dicts: name, path, type, size_bytes, link_target
    url = sb.tunnel(8080); sb.list_tunnels(); sb.close_tunnel(url.tunnel_id)
    sb.poll(); sb.wait_for_running(timeout=120)
# terminate() ran on exit
print("example C done", page[0]["name"])
