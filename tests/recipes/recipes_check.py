#!/usr/bin/env python3
"""Runs the nightly recipes of docs/recipes as a user would, on this machine.

  recipes_check.py --deb rdmaconf_V_A.deb --captures DIR --work DIR

1. The image: docs/recipes/build-image makes it from Debian packages and the
   .deb (mmdebstrap, podman import); it runs under podman with the runc
   runtime and explicit limits.
2. Kubernetes: the manifests are read and held to what a cluster needs
   (Indexed Job, RDMACONF_SHARDS equal to completions, ReadWriteMany claims,
   the image), then every pod's command runs in the image under podman, with
   the Job's environment, its index and its volumes: the check Job's pods,
   then the merge Job's, two nights.
3. Slurm: a one-node cluster of our own (tests/recipes/slurm-cluster), the
   packaged nightly.sh submitted three nights: every array task and merge
   COMPLETED on the first two; on the third, over captures where a clean
   one was replaced by a faulty one, the shards COMPLETED and the merge
   FAILED, its diff naming the capture.
4. GitHub Actions and GitLab CI: the files are read and held to their job
   graph (package, check in parallel, report; artifacts and the cache kept
   when the report fails), and the shard and report steps run in the image
   with the variables the CI service would set.
Each merged run must have the verdicts of one unsharded run of the same
captures (report diff: nothing changed). Exit 0 when every part passed.
"""
import argparse
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
RECIPES = os.path.join(SRC, "docs", "recipes")
# runc, not crun (which refuses this kind of machine's cgroup layout), and
# limits given outright: runc may not raise them to the engine's defaults.
PODMAN_RUN = ["podman", "--runtime", "runc", "run", "--rm", "--network", "none",
              "--ulimit", "nofile=4096:4096", "--ulimit", "nproc=4096:4096"]

failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)
    return cond


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def in_image(image, command, env=None, mounts=(), workdir=None):
    """Runs COMMAND (a list) in IMAGE; MOUNTS are (host, path, read_only)."""
    cmd = list(PODMAN_RUN)
    for k, v in (env or {}).items():
        cmd += ["--env", f"{k}={v}"]
    for host, path, ro in mounts:
        cmd += ["-v", f"{host}:{path}" + (":ro" if ro else "")]
    if workdir:
        cmd += ["--workdir", workdir]
    return run(cmd + [image] + command)


def same_verdicts(rdmaconf, whole, merged, what):
    d = run([rdmaconf, "report", "diff", whole, merged])
    check(d.returncode == 0 and "0 regression(s), 0 improvement(s), 0 new item(s), 0 gone" in d.stdout,
          f"{what}: the merged run has the verdicts of one unsharded run ({d.stdout.strip().splitlines()[-1:]})")


# -- the image --------------------------------------------------------------

def build_image(deb):
    r = run([os.path.join(RECIPES, "build-image"), deb])
    if not check(r.returncode == 0, "build-image makes an image from Debian packages and the .deb"):
        print(r.stderr[-3000:], file=sys.stderr)
        sys.exit(1)
    tag = r.stdout.strip().splitlines()[-1]
    version = run(["dpkg-deb", "-f", deb, "Version"]).stdout.strip()
    check(tag == f"localhost/rdmaconf:{version}", f"the image is tagged with the package's version ({tag})")
    v = in_image(tag, ["rdmaconf", "--version"])
    check(v.returncode == 0 and v.stdout.strip() == version, f"rdmaconf runs in the image under runc ({v.stdout.strip()})")
    return tag


# -- Kubernetes -------------------------------------------------------------

def kube(image, captures, work, rdmaconf, whole):
    kdir = os.path.join(RECIPES, "kubernetes")
    claims = {}
    for doc in yaml.safe_load_all(open(os.path.join(kdir, "storage.yaml"))):
        check(doc["kind"] == "PersistentVolumeClaim", f"storage.yaml: {doc['metadata']['name']} is a claim")
        check("ReadWriteMany" in doc["spec"]["accessModes"],
              f"storage.yaml: {doc['metadata']['name']} is ReadWriteMany (pods on several nodes)")
        claims[doc["metadata"]["name"]] = None
    # The claims on this machine: the captures, and a reports folder.
    reports = os.path.join(work, "kube-reports")
    shutil.rmtree(reports, ignore_errors=True)
    os.makedirs(reports)
    claims.update({"rdmaconf-captures": captures, "rdmaconf-reports": reports})

    def pod(job, index=None):
        spec = job["spec"]["template"]["spec"]
        check(spec["restartPolicy"] == "Never", f"{job['metadata']['name']}: restartPolicy Never")
        volumes = {v["name"]: v["persistentVolumeClaim"] for v in spec["volumes"]}
        for v in volumes.values():
            check(v["claimName"] in claims, f"{job['metadata']['name']}: claim {v['claimName']} is in storage.yaml")
        (c,) = spec["containers"]
        check(c["image"] == "localhost/rdmaconf:latest", f"{job['metadata']['name']}: runs the recipe's image")
        env = {e["name"]: e["value"] for e in c.get("env", [])}
        if index is not None:
            env["JOB_COMPLETION_INDEX"] = str(index)
        mounts = [(claims[volumes[m["name"]]["claimName"]], m["mountPath"], m.get("readOnly", False))
                  for m in c.get("volumeMounts", [])]
        r = in_image(image.rsplit(":", 1)[0] + ":latest", c["command"] + c.get("args", []), env, mounts)
        return r

    check_job = yaml.safe_load(open(os.path.join(kdir, "check-job.yaml")))
    merge_job = yaml.safe_load(open(os.path.join(kdir, "merge-job.yaml")))
    spec = check_job["spec"]
    n = spec["completions"]
    check(spec.get("completionMode") == "Indexed", "check-job.yaml: an Indexed Job")
    env = {e["name"]: e["value"] for e in spec["template"]["spec"]["containers"][0]["env"]}
    check(env.get("RDMACONF_SHARDS") == str(n), f"check-job.yaml: RDMACONF_SHARDS equals completions ({n})")
    check(merge_job["spec"].get("backoffLimit") == 0, "merge-job.yaml: a regression is not retried")
    script = open(os.path.join(kdir, "nightly.sh")).read()
    for f in re.findall(r'-f "\$here/([\w.-]+)"', script):
        check(os.path.exists(os.path.join(kdir, f)), f"kubernetes/nightly.sh applies {f}, which exists")
    for name in (check_job["metadata"]["name"], merge_job["metadata"]["name"]):
        check(f"job/{name}" in script, f"kubernetes/nightly.sh waits for job/{name}")
    for night in (1, 2):
        for i in range(n):
            r = pod(check_job, i)
            check(r.returncode == 0, f"night {night}: check pod {i}/{n} succeeds (exit {r.returncode}) {r.stderr[-500:]}")
        r = pod(merge_job)
        check(r.returncode == 0, f"night {night}: the merge pod succeeds (exit {r.returncode}) {r.stderr[-500:]}{r.stdout[-500:]}")
        same_verdicts(rdmaconf, whole, os.path.join(reports, "run.json"), f"Kubernetes night {night}")
        check(len(glob.glob(os.path.join(reports, "merged-shards", "shard-*.json"))) == n,
              f"night {night}: the {n} shards moved to merged-shards/")
        check(os.path.getsize(os.path.join(reports, "dashboard.html")) > 10000, f"night {night}: the dashboard is written")
    check("0 regression(s)" in open(os.path.join(reports, "diff.txt")).read(), "night 2 compared with night 1")
    # A shard that never ran leaves a hole the merge names (not last night's file).
    for i in range(n - 1):
        pod(check_job, i)
    r = pod(merge_job)
    check(r.returncode == 2 and f"shard(s) {n - 1} of {n} missing" in r.stderr + r.stdout,
          f"a missing shard stops the merge pod, named ({(r.stderr + r.stdout).strip()[-200:]})")


# -- Slurm ------------------------------------------------------------------

def slurm(root, captures, work, whole):
    rdmaconf = os.path.join(root, "usr/bin/rdmaconf")
    recipes = os.path.join(root, "usr/share/rdmaconf/recipes")
    cluster = os.path.join(work, "slurm-cluster")
    shutil.rmtree(cluster, ignore_errors=True)
    r = run([os.path.join(HERE, "slurm-cluster"), "start", cluster])
    if not check(r.returncode == 0, "a one-node Slurm cluster starts (munged, slurmctld, slurmd)"):
        print(r.stderr, file=sys.stderr)
        return
    env = dict(os.environ, SLURM_CONF=r.stdout.strip(), RDMACONF=rdmaconf,
               NIGHTLY_REPORT=os.path.join(recipes, "nightly-report"))
    run_dir = os.path.join(work, "slurm-run")
    shutil.rmtree(run_dir, ignore_errors=True)
    try:
        # The third night's captures: a clean one replaced by a faulty one.
        worse = os.path.join(work, "captures-worse")
        shutil.rmtree(worse, ignore_errors=True)
        shutil.copytree(captures, worse)
        clean = sorted(os.path.basename(m)[:-len(".manifest.json")] for m in glob.glob(os.path.join(captures, "iwarp-*.manifest.json"))
                       if "FAIL" not in json.load(open(m)).get("expected", {}).values())[0]
        shutil.copy(os.path.join(captures, "iwarp-fault-crc.pcap"), os.path.join(worse, clean + ".pcap"))
        for night, caps in ((1, captures), (2, captures), (3, worse)):
            r = run([os.path.join(recipes, "slurm", "nightly.sh"), caps, run_dir, "3"], env=env)
            if not check(r.returncode == 0, f"Slurm night {night}: nightly.sh submits the array and the merge ({r.stdout.strip()})"):
                print(r.stderr, file=sys.stderr)
                return
            ids = re.match(r"array (\d+) \(3 shards\), merge (\d+)", r.stdout.strip())
            array, merge = ids.group(1), ids.group(2)
            deadline = time.time() + 300
            while time.time() < deadline and run(["squeue", "-h"], env=env).stdout.strip():
                time.sleep(1)
            check(not run(["squeue", "-h"], env=env).stdout.strip(), f"Slurm night {night}: every job ended within 300 s")
            states = {}
            for line in open(os.path.join(cluster, "jobcomp.log")):
                f = dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
                if f.get("ArrayJobId") == array or f.get("JobId") == merge:
                    states[f"task {f['ArrayTaskId']}" if f.get("ArrayJobId") == array else "merge"] = f["JobState"]
            want_merge = "FAILED" if night == 3 else "COMPLETED"
            check(states == {"task 0": "COMPLETED", "task 1": "COMPLETED", "task 2": "COMPLETED", "merge": want_merge},
                  f"Slurm night {night}: array tasks COMPLETED, merge {want_merge} ({states})")
            if night < 3:
                same_verdicts(rdmaconf, whole, os.path.join(run_dir, "run.json"), f"Slurm night {night}")
        diff = open(os.path.join(run_dir, "diff.txt")).read()
        check(clean in diff and "regression" in diff, f"Slurm night 3: diff.txt names the regressed capture {clean}")
        hist = [json.loads(l)["run"] for l in open(os.path.join(run_dir, "history", "history.jsonl"))]
        check(len(set(hist)) == 3, f"Slurm: the history holds three runs ({len(set(hist))})")
    finally:
        run([os.path.join(HERE, "slurm-cluster"), "stop", cluster])


# -- GitHub Actions and GitLab CI -------------------------------------------

def step_script(run_text, values, what):
    def sub(m):
        key = m.group(1).strip()
        if key not in values:
            check(False, f"{what}: no value for ${{{{ {key} }}}}")
            return ""
        return str(values[key])
    return re.sub(r"\$\{\{([^}]*)\}\}", sub, run_text)


def github(image, captures, work, rdmaconf, whole):
    wf = yaml.safe_load(open(os.path.join(RECIPES, "github-actions.yml")))
    jobs = wf["jobs"]
    check(list(jobs) == ["package", "check", "report"], "github-actions.yml: jobs package, check, report")
    check(jobs["check"]["needs"] == "package" and jobs["report"]["needs"] == "check", "github-actions.yml: each job needs the one before")
    for name, job in jobs.items():
        check(job.get("container") == "debian:12", f"github-actions.yml: {name} runs in Debian 12, the packages' release")
    shards = int(wf["env"]["SHARDS"])
    check(jobs["check"]["strategy"]["matrix"]["shard"] == list(range(shards)), f"github-actions.yml: the matrix is shards 0..{shards - 1}")
    steps = {name: {s["id"]: s for s in job["steps"] if "id" in s} for name, job in jobs.items()}
    check("tools/build-deb debs" in steps["package"]["build"]["run"], "github-actions.yml: the package job builds with tools/build-deb")
    for name in ("check", "report"):
        check("./debs/rdmaconf_*.deb" in steps[name]["install"]["run"], f"github-actions.yml: {name} installs the .deb")
    uses = [s for s in jobs["report"]["steps"] if "uses" in s]
    kept = [s for s in uses if s["uses"].startswith(("actions/upload-artifact", "actions/cache/save"))]
    check(len(kept) == 2 and all(s.get("if") == "always()" for s in kept),
          "github-actions.yml: the dashboard and the cache are kept when the report fails")
    check(any("nightly/dashboard.html" in s.get("with", {}).get("path", "") for s in kept), "github-actions.yml: the dashboard is an artifact")
    ws = os.path.join(work, "github")
    shutil.rmtree(ws, ignore_errors=True)
    os.makedirs(os.path.join(ws, "report", "shards"))
    bash = ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c"]
    for i in range(shards):
        job_ws = os.path.join(ws, f"check-{i}")
        shutil.copytree(captures, os.path.join(job_ws, "captures"))
        script = step_script(steps["check"]["shard"]["run"], {"matrix.shard": i, "env.SHARDS": shards}, "check")
        r = in_image(image, bash + [script], mounts=[(job_ws, "/ws", False)], workdir="/ws")
        check(r.returncode == 0, f"github-actions.yml: shard {i} runs (exit {r.returncode}) {r.stderr[-300:]}")
        for f in glob.glob(os.path.join(job_ws, "shards", "*")):  # download-artifact, merge-multiple
            shutil.copy(f, os.path.join(ws, "report", "shards"))
    report = steps["report"]["report"]
    values = {"github.run_number": 7, "github.sha": "0" * 40}
    env = {k: step_script(v, values, "report env") for k, v in report.get("env", {}).items()}
    env["GITHUB_STEP_SUMMARY"] = "/ws/step-summary.md"
    r = in_image(image, bash + [step_script(report["run"], values, "report")], env, [(os.path.join(ws, "report"), "/ws", False)], "/ws")
    check(r.returncode == 0, f"github-actions.yml: the report step runs (exit {r.returncode}) {r.stderr[-300:]}")
    same_verdicts(rdmaconf, whole, os.path.join(ws, "report", "nightly", "run.json"), "GitHub Actions")
    check(os.path.exists(os.path.join(ws, "report", "step-summary.md")), "github-actions.yml: the summary goes to the job's page")
    hist = [json.loads(l) for l in open(os.path.join(ws, "report", "nightly", "history", "history.jsonl"))]
    check({h["run"] for h in hist} == {"run-7"} and {h.get("commit") for h in hist} == {"0" * 40},
          "github-actions.yml: the history names the run and the commit")


def gitlab(image, captures, work, rdmaconf, whole):
    ci = yaml.safe_load(open(os.path.join(RECIPES, "gitlab-ci.yml")))
    check(ci["stages"] == ["package", "check", "report"], "gitlab-ci.yml: stages package, check, report")
    check(ci["default"]["image"] == "debian:12", "gitlab-ci.yml: jobs run in Debian 12, the packages' release")
    check(any("tools/build-deb debs" in l for l in ci["package"]["script"]), "gitlab-ci.yml: the package job builds with tools/build-deb")
    check("debs/" in ci["package"]["artifacts"]["paths"], "gitlab-ci.yml: the packages pass to later jobs")
    for name in ("check", "report"):
        check(any("./debs/rdmaconf_*.deb" in l for l in ci[name]["before_script"]), f"gitlab-ci.yml: {name} installs the .deb")
    n = ci["check"]["parallel"]
    check(ci["check"]["artifacts"]["reports"]["junit"] == "shards/*.xml", "gitlab-ci.yml: the shards' JUnit goes to test reports")
    check(ci["report"]["artifacts"]["when"] == "always" and "nightly/dashboard.html" in ci["report"]["artifacts"]["paths"],
          "gitlab-ci.yml: the dashboard is kept when the report fails")
    check(ci["report"]["cache"]["when"] == "always" and "nightly/last-night.json" in ci["report"]["cache"]["paths"],
          "gitlab-ci.yml: last night's report is cached from one pipeline to the next")
    ws = os.path.join(work, "gitlab")
    shutil.rmtree(ws, ignore_errors=True)
    os.makedirs(os.path.join(ws, "report", "shards"))
    bash = ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c"]
    for i in range(1, n + 1):
        job_ws = os.path.join(ws, f"check-{i}")
        shutil.copytree(captures, os.path.join(job_ws, "captures"))
        env = {"CI_NODE_INDEX": i, "CI_NODE_TOTAL": n}
        r = in_image(image, bash + ["\n".join(ci["check"]["script"])], env, [(job_ws, "/ws", False)], "/ws")
        check(r.returncode == 0, f"gitlab-ci.yml: parallel job {i}/{n} runs (exit {r.returncode}) {r.stderr[-300:]}")
        for f in glob.glob(os.path.join(job_ws, "shards", "*")):
            shutil.copy(f, os.path.join(ws, "report", "shards"))
    ci_env = {"CI_PIPELINE_IID": "12", "CI_COMMIT_SHA": "1" * 40}
    env = {k: re.sub(r"\$(\w+)", lambda m: ci_env[m.group(1)], v) for k, v in ci["report"]["variables"].items()}
    r = in_image(image, bash + ["\n".join(ci["report"]["script"])], env, [(os.path.join(ws, "report"), "/ws", False)], "/ws")
    check(r.returncode == 0, f"gitlab-ci.yml: the report job runs (exit {r.returncode}) {r.stderr[-300:]}")
    same_verdicts(rdmaconf, whole, os.path.join(ws, "report", "nightly", "run.json"), "GitLab CI")
    hist = [json.loads(l) for l in open(os.path.join(ws, "report", "nightly", "history", "history.jsonl"))]
    check({h["run"] for h in hist} == {"pipeline-12"}, "gitlab-ci.yml: the history names the pipeline")


def main():
    # A CI timeout's SIGTERM unwinds like an error, so that the Slurm part's
    # finally stops the daemons it started.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--deb", required=True)
    ap.add_argument("--captures", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    work = os.path.abspath(a.work)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    captures = os.path.join(work, "captures")
    shutil.copytree(a.captures, captures)
    root = os.path.join(work, "root")
    subprocess.run(["dpkg-deb", "-x", a.deb, root], check=True)
    rdmaconf = os.path.join(root, "usr/bin/rdmaconf")
    whole = os.path.join(work, "whole.json")
    r = run([rdmaconf, "check", "--quiet", captures, "--json", whole])
    check(r.returncode == 1, "one unsharded run of the captures: the reference (exit 1, the faulty captures FAIL)")
    image = build_image(a.deb)
    parts = {"Kubernetes": lambda: kube(image, captures, work, rdmaconf, whole),
             "Slurm": lambda: slurm(root, captures, work, whole),
             "GitHub Actions": lambda: github(image, captures, work, rdmaconf, whole),
             "GitLab CI": lambda: gitlab(image, captures, work, rdmaconf, whole)}
    for name, part in parts.items():
        started = time.time()
        part()
        print(f"-- {name}: {time.time() - started:.0f} s", flush=True)
    if failures:
        print(f"{len(failures)} recipe check(s) failed", file=sys.stderr)
        return 1
    print("every recipe ran as documented")
    return 0


if __name__ == "__main__":
    sys.exit(main())
