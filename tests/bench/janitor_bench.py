#!/usr/bin/env python3
"""janitor_bench.py - `make bench-janitor`: the janitor's sweep of 1k / 20k / 100k pods.

A minimal Kubernetes API server on 127.0.0.1 serves `GET /api/v1/pods?limit=L[&continue=K]` as
metadata-only pages (PartialObjectMetadataList, what the janitor asks for), rendered before the
run so the server answers as fast as it can and the client is what is measured.  One pod in ten
carries `janitor/ttl: 720h` (listed in the plan, not due), one in three an owner reference.
For each size, `alertbridge janitor sweep --once --dry-run` runs under GNU time, which reports
its CPU (user + system) and max RSS.  A run over no pod is
subtracted, so startup does not count.  Printed per size: CPU us per pod, requests per pass,
pages, max RSS, and the plan lines (one per annotated pod) as a check that every page was read.

Then instructions per pod under callgrind (a sweep of JANITOR_BENCH_CALLGRIND_PODS pods minus one
of none): a count that does not drift with machine load.

usage: janitor_bench.py ALERTBRIDGE
env:   JANITOR_BENCH_SIZES (1000,20000,100000), JANITOR_BENCH_CALLGRIND_PODS (20000; 0 skips),
       JANITOR_BENCH_CALLGRIND_KEEP (a folder where the callgrind outputs are kept)
Exit status 0; 1 when a sweep failed or its plan missed pods; 2 on setup.
"""

import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

SIZES = [int(x) for x in os.environ.get("JANITOR_BENCH_SIZES", "1000,20000,100000").split(",")]
CG_PODS = int(os.environ.get("JANITOR_BENCH_CALLGRIND_PODS", "20000"))
KEEP_CG = os.environ.get("JANITOR_BENCH_CALLGRIND_KEEP")
TOKEN = "bench-kube-token-0123456789"


def pages(n, limit):
    """The list of n pods as pre-rendered pages of limit items: {continue token: bytes}."""
    out = {}
    created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 86400))
    for start in range(0, max(n, 1), limit):
        items = []
        for i in range(start, min(start + limit, n)):
            md = {"name": "pod-%d" % i, "namespace": "ns-%d" % (i % 50),
                  "uid": "00000000-0000-4000-8000-%012d" % i, "resourceVersion": str(1000 + i),
                  "creationTimestamp": created,
                  "labels": {"app": "train-%d" % (i % 97), "owner": "user%d" % (i % 400)}}
            if i % 10 == 0:
                md["annotations"] = {"janitor/ttl": "720h"}
            if i % 3 == 0:
                md["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job",
                                          "name": "job-%d" % i, "uid": "job-uid-%d" % i,
                                          "controller": True}]
            items.append({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                          "metadata": md})
        nxt = "" if start + limit >= n else "c%d" % (start + limit)
        body = {"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1",
                "metadata": {"resourceVersion": "99999", "continue": nxt}, "items": items}
        out["" if start == 0 else "c%d" % start] = json.dumps(body).encode()
    return out


class Server:
    def __init__(self):
        self.pages = {}
        self.limit = None
        self.requests = 0
        self.n = 0
        srv = self

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_GET(self):
                u = urllib.parse.urlsplit(self.path)
                q = dict(urllib.parse.parse_qsl(u.query))
                if u.path == "/_bench":  # the bench's own control: set N, read the count
                    if "n" in q:
                        srv.serve(int(q["n"]))
                    return self.answer(200, str(srv.requests).encode())
                srv.requests += 1
                if self.headers.get("Authorization") != "Bearer " + TOKEN:
                    return self.answer(401, b'{"kind":"Status","code":401}')
                if u.path != "/api/v1/pods":
                    return self.answer(404, b'{"kind":"Status","code":404}')
                limit = int(q.get("limit", "0"))
                if srv.limit != limit:
                    srv.pages, srv.limit = pages(srv.n, limit), limit
                body = srv.pages.get(q.get("continue", ""))
                if body is None:
                    return self.answer(410, b'{"kind":"Status","code":410}')
                self.answer(200, body)

            def answer(self, code, body):
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = "http://127.0.0.1:%d" % self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def serve(self, n, limit=500):
        self.n, self.requests = n, 0
        self.pages, self.limit = pages(n, limit), limit  # the janitor asks for 500 a page


def control(url, query):
    with urllib.request.urlopen(url + "/_bench?" + query, timeout=600) as r:
        return int(r.read())


def instructions(binary, workdir):
    """Instructions of one dry-run sweep under callgrind (its totals line)."""
    out = os.path.join(workdir, "callgrind.out")
    subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out, binary,
                    "janitor", "sweep", "--once", "--dry-run", "--config.file=alertbridge.yml"],
                   cwd=workdir, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   timeout=900)
    with open(out) as f:
        m = re.search(r"^(?:summary|totals): (\d+)", f.read(), re.M)
    if KEEP_CG:
        shutil.copy(out, os.path.join(KEEP_CG, "callgrind.janitor.%d" % len(os.listdir(KEEP_CG))))
    os.unlink(out)
    return int(m.group(1)) if m else 0


def sweep(binary, workdir):
    """Run one dry-run sweep; (cpu seconds, max RSS KiB, plan lines, exit code, output).
    GNU time starts it and reports its rusage: a child forked from this Python process would
    count Python's pages in its max RSS until its exec."""
    rusage = os.path.join(workdir, "rusage")
    with open(os.path.join(workdir, "out"), "w") as out:
        rc = subprocess.run(["/usr/bin/time", "-o", rusage, "-f", "%U %S %M", binary, "janitor",
                             "sweep", "--once", "--dry-run", "--config.file=alertbridge.yml"],
                            cwd=workdir, stdout=out, stderr=subprocess.STDOUT,
                            timeout=600).returncode
    with open(rusage) as f:
        user, system, maxrss = f.read().split()[-3:]
    with open(os.path.join(workdir, "out")) as f:
        text = f.read()
    planned = sum(1 for ln in text.splitlines() if ln.split()[1:2] and
                  ln.split()[1].startswith("pod-"))
    return float(user) + float(system), int(maxrss), planned, rc, text


def main():
    if len(sys.argv) != 2:
        print("usage: janitor_bench.py ALERTBRIDGE", file=sys.stderr)
        return 2
    if sys.argv[1] == "--serve":
        # The API server runs in a process of its own, so its pages stay out of the way.
        srv = Server()
        print(srv.url, flush=True)
        sys.stdin.read()  # until the bench closes the pipe
        return 0
    binary = os.path.abspath(sys.argv[1])
    server = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--serve"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    url = server.stdout.readline().strip()
    if not url.startswith("http://"):
        print("janitor bench: the API server did not start", file=sys.stderr)
        return 2
    tmp = tempfile.mkdtemp(prefix="ab-janbench-")
    status = 0
    try:
        for name, text in (("kubeconfig",
                            "apiVersion: v1\nkind: Config\n"
                            "clusters:\n- name: b\n  cluster:\n    server: %s\n"
                            "users:\n- name: j\n  user:\n    token: %s\n"
                            "contexts:\n- name: b\n  context:\n    cluster: b\n    user: j\n"
                            "current-context: b\n" % (url, TOKEN)),
                           ("slack-token", "xoxb-bench\n"),
                           ("alertbridge.yml",
                            "listen_address: 127.0.0.1:9\n"
                            "database: alertbridge.db\n"
                            "log: {level: warn, format: logfmt}\n"
                            "janitor:\n"
                            "  enabled: true\n"
                            "  dry_run: true\n"
                            "  kubernetes: {kubeconfig: kubeconfig}\n"
                            "  policies:\n"
                            "    - {alertname: JanitorGPUIdle, grace: 1h, notice_lead: 1h}\n"
                            "  slack:\n"
                            "    api_url: http://127.0.0.1:9/api\n"
                            "    bot_token_file: slack-token\n"
                            "    default_channel: \"#gpu\"\n"
                            "leader_election: {enabled: false}\n")):
            with open(os.path.join(tmp, name), "w") as f:
                f.write(text)
        control(url, "n=0")
        cpu0, rss0, _, rc, text = sweep(binary, tmp)
        if rc != 0:
            print("janitor bench: the empty sweep failed (exit %d):\n%s" % (rc, text[-3000:]),
                  file=sys.stderr)
            return 2
        print("janitor sweep --once --dry-run over N pods (metadata-only pages of 500; "
              "1 in 10 annotated); startup (%.1f ms CPU, %d KiB) subtracted from CPU "
              "(GNU time: 10 ms steps)"
              % (cpu0 * 1000, rss0))
        print("%9s %12s %12s %9s %12s %8s" % ("pods", "CPU us/pod", "CPU ms/pass",
                                             "requests", "max RSS KiB", "planned"))
        for n in SIZES:
            control(url, "n=%d" % n)
            cpu, rss, planned, rc, text = sweep(binary, tmp)
            requests = control(url, "")
            want = (n + 9) // 10
            # GNU time counts in 10 ms steps: a small pass can come out below the startup
            cpu = max(cpu - cpu0, 0.0)
            print("%9d %12.2f %12.1f %9d %12d %8d" % (n, cpu * 1e6 / n, cpu * 1000, requests, rss,
                                                       planned), flush=True)
            if rc != 0 or planned != want:
                print("janitor bench: sweep of %d pods: exit %d, %d planned (want %d):\n%s"
                      % (n, rc, planned, want, text[-2000:]), file=sys.stderr)
                status = 1
        if CG_PODS and shutil.which("valgrind"):
            control(url, "n=0")
            i0 = instructions(binary, tmp)
            control(url, "n=%d" % CG_PODS)
            i1 = instructions(binary, tmp)
            print("callgrind: %.0f instructions per pod (a sweep of %d pods minus one of none)"
                  % ((i1 - i0) / CG_PODS, CG_PODS))
    finally:
        server.stdin.close()
        server.wait(timeout=30)
        shutil.rmtree(tmp, ignore_errors=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
