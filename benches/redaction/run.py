#!/usr/bin/env python3
"""Times `opm mod build` of a module with Secrets and checksum references, two binaries
alternating (benches/RESULTS.md, "Redaction and checksum references after the security pass").

    python3 benches/redaction/run.py BEFORE_OPM AFTER_OPM [RUNS] [COMPONENTS]
"""
import os, statistics, subprocess, sys, tempfile, time

before, after = sys.argv[1], sys.argv[2]
runs = int(sys.argv[3]) if len(sys.argv) > 3 else 7
count = int(sys.argv[4]) if len(sys.argv) > 4 else 1000

lines = ["apiVersion: core.opm.dev/v1", "kind: Module",
         "metadata: {name: refs, version: 1.0.0, namespace: refs}", "components:"]
for i in range(count):
    lines += [f"  svc-{i:04}:", "    resources:",
              f"      Container: {{image: registry.example/svc:{i}, ports: {{http: {{containerPort: 8080}}}}, "
              f"env: {{MODE: {{configMapKeyRef: {{name: svc-{i:04}, key: mode}}}}}}}}",
              f"      ConfigMap: {{data: {{mode: fast-{i}}}}}",
              f"      Secret: {{stringData: {{token: token-value-{i:04}-abcdefgh}}}}",
              "    traits:", "      Expose: {}", "      Replicas: 2"]
module = os.path.join(tempfile.mkdtemp(), "module.yaml")
with open(module, "w") as f:
    f.write("\n".join(lines) + "\n")

env = dict(os.environ, SOURCE_DATE_EPOCH="0")
variants = {"before": before, "after": after}
for extra in ([], ["--verbose"]):
    outputs = {}
    for name, exe in variants.items():  # warms the compile cache; the outputs must agree
        done = subprocess.run([exe, "mod", "build", module, "-j", "2", *extra], capture_output=True, env=env)
        assert done.returncode == 0, done.stderr[-2000:]
        outputs[name] = done.stdout
    assert outputs["before"] == outputs["after"], "the two binaries render differently"
    times = {name: [] for name in variants}
    for _ in range(runs):
        for name, exe in variants.items():
            start = time.perf_counter()
            subprocess.run([exe, "mod", "build", module, "-j", "2", *extra],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=True)
            times[name].append(time.perf_counter() - start)
    b, a = statistics.median(times["before"]), statistics.median(times["after"])
    print(f"{' '.join(extra) or 'plain'}: before {b:.3f} s, after {a:.3f} s, after/before {a / b:.2f}")
