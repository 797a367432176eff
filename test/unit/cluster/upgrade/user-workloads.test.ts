import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readInputs } from "../../../../src/action/inputs.js";
import { probeOptions } from "../../../../src/cluster/upgrade/probes/options.js";
import {
  commandTarget,
  createUserObjects,
  runnerUrlTarget,
  userRequestTarget,
} from "../../../../src/cluster/upgrade/probes/user-targets.js";
import { userWorkloadsFromManifest } from "../../../../src/cluster/upgrade/probes/user-workloads.js";
import type { KubeClient, ObjectRef } from "../../../../src/kube/types.js";

// The user's own workloads as the workload probe (--probe-manifest, --probe-command and the
// action's upgrade-probe-manifest, upgrade-probe-command): what a manifest's annotations ask
// for, every unusable manifest refused naming the file, object and annotation before any host is
// contacted, and the command's verdict from its exit status.

const SERVICE = `apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: shop
  annotations:
    kubeforge.dev/probe-url: /healthz
    kubeforge.dev/probe-port: http
spec:
  ports: [{ name: metrics, port: 9090 }, { name: http, port: 80 }]
`;
const DEPLOYMENT = `apiVersion: apps/v1
kind: Deployment
metadata: { name: web, namespace: shop }
`;
const INGRESS_URL = `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: front
  annotations: { kubeforge.dev/probe-url: "http://front.example:8080/ping" }
`;

describe("userWorkloadsFromManifest", () => {
  it("reads the requests the annotations ask for and the Deployments to follow", () => {
    const w = userWorkloadsFromManifest(
      `${SERVICE}---\n${DEPLOYMENT}---\n${INGRESS_URL}`,
      "probes.yaml",
    );
    expect(w.objects.map((o) => o.kind)).toEqual(["Service", "Deployment", "Ingress"]);
    expect(w.requests).toEqual([
      {
        name: "shop/web",
        via: "service-proxy",
        namespace: "shop",
        service: "web",
        port: "http",
        path: "/healthz",
      },
      // No namespace: "default", as kubectl puts it.
      { name: "default/front", via: "runner", url: "http://front.example:8080/ping" },
    ]);
    expect(w.deployments).toEqual([{ namespace: "shop", name: "web" }]);
  });

  it("proxies to the Service's first port without a probe-port, by number when it has no name", () => {
    const w = userWorkloadsFromManifest(
      SERVICE.replace("    kubeforge.dev/probe-port: http\n", "").replace(
        "{ name: metrics, port: 9090 }",
        "{ port: 9090 }",
      ),
      "p.yaml",
    );
    expect(w.requests[0]).toMatchObject({ via: "service-proxy", port: "9090" });
  });

  it.each([
    [
      "a path on an object that is not a Service",
      INGRESS_URL.replace('"http://front.example:8080/ping"', "/ping"),
      /^the probe manifest p\.yaml, object 1 \(Ingress front\): kubeforge\.dev\/probe-url "\/ping" is a path, which only a Service takes/,
    ],
    [
      "a value that is neither a URL nor a path",
      INGRESS_URL.replace('"http://front.example:8080/ping"', "front:8080"),
      /^the probe manifest p\.yaml, object 1 \(Ingress front\): kubeforge\.dev\/probe-url "front:8080" is neither an http\(s\) URL nor a path starting with \//,
    ],
    [
      "a probe-port the Service does not have",
      SERVICE.replace("probe-port: http", "probe-port: grpc"),
      /^the probe manifest p\.yaml, object 1 \(Service web\): kubeforge\.dev\/probe-port "grpc" names no port of the Service \(it has metrics, http\)/,
    ],
    [
      "nothing to probe",
      "apiVersion: v1\nkind: ConfigMap\nmetadata: { name: c }\n",
      /^the probe manifest p\.yaml gives nothing to probe: no object has a kubeforge\.dev\/probe-url annotation and none is a Deployment$/,
    ],
    [
      "an object without a name",
      "apiVersion: v1\nkind: Service\nmetadata: {}\n",
      /^the probe manifest p\.yaml: document 1: has no metadata\.name/,
    ],
  ])("refuses %s, naming the file and the object", (_, text, message) => {
    expect(() => userWorkloadsFromManifest(text, "p.yaml")).toThrow(message);
  });
});

describe("probeOptions with the user's workloads", () => {
  const names = {
    probes: "--probe",
    interval: "--probe-interval",
    maxApiDowntime: "--max-api-downtime",
    manifest: "--probe-manifest",
    command: "--probe-command",
  };
  const base = { probes: ["api"], interval: "500ms", keep: false };

  it("turns the workload probe on in place of the canary, and its thresholds are accepted", () => {
    const o = probeOptions(
      {
        ...base,
        manifest: { path: "/w/probes.yaml", read: () => SERVICE },
        command: "curl -fsS http://x",
        maxWorkloadErrorRate: "1%",
      },
      names,
    );
    expect(o.apiProbes).toEqual({ intervalMs: 500, keep: false });
    expect(o.workloadProbes?.user).toMatchObject({
      source: "/w/probes.yaml",
      command: "curl -fsS http://x",
      requests: [{ name: "shop/web" }],
    });
    expect(o.thresholds?.maxWorkloadErrorRate).toEqual({ text: "1%", rate: 0.01 });
  });

  it("refuses them with --probe none, an empty command, and a bad manifest, naming the flag", () => {
    expect(() => probeOptions({ ...base, probes: ["none"], command: "true" }, names)).toThrow(
      "--probe-command: probes a workload, and --probe is none; give one or the other",
    );
    expect(() => probeOptions({ ...base, command: "  " }, names)).toThrow(
      "--probe-command: is empty; give a command for /bin/sh",
    );
    expect(() =>
      probeOptions({ ...base, manifest: { path: "m.yaml", read: () => "kind: [" } }, names),
    ).toThrow(/^--probe-manifest: the probe manifest m\.yaml: document 1 is not valid YAML/);
    // The DNS lookup runs in the canary's Pods, which the user's workloads replace.
    expect(() =>
      probeOptions({ ...base, probes: ["api", "workload", "dns"], command: "true" }, names),
    ).toThrow(
      "--probe: dns looks up from kubeforge's canary Pods, which --probe-command replaces; drop one",
    );
    expect(() =>
      probeOptions(
        {
          ...base,
          probes: ["workload", "dns"],
          manifest: { path: "/w/probes.yaml", read: () => SERVICE },
        },
        names,
      ),
    ).toThrow(
      "--probe: dns looks up from kubeforge's canary Pods, which --probe-manifest replaces; drop one",
    );
  });
});

describe("the action's upgrade-probe-manifest and upgrade-probe-command", () => {
  const inputsOf = (values: Record<string, string>) => (name: string) => values[name] ?? "";

  it("reads the manifest from the workspace before anything else happens", async () => {
    const dir = await mkdtemp(join(tmpdir(), "kubeforge-probe-manifest-"));
    try {
      await writeFile(join(dir, "probes.yaml"), SERVICE);
      const inputs = readInputs(
        inputsOf({
          "upgrade-to": "v1.36.3",
          "upgrade-probe-manifest": "probes.yaml",
          "upgrade-probe-command": "test -f /tmp/ok",
        }),
        { GITHUB_WORKSPACE: dir },
      );
      expect(inputs.upgrade?.probes.workloadProbes?.user).toMatchObject({
        source: join(dir, "probes.yaml"),
        command: "test -f /tmp/ok",
        requests: [{ via: "service-proxy", service: "web" }],
      });
      expect(() =>
        readInputs(
          inputsOf({ "upgrade-to": "v1.36.3", "upgrade-probe-manifest": "missing.yaml" }),
          { GITHUB_WORKSPACE: dir },
        ),
      ).toThrow(/^input upgrade-probe-manifest: cannot read the probe manifest .*missing\.yaml/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("refuses them without upgrade-to", () => {
    expect(() => readInputs(inputsOf({ "upgrade-probe-command": "true" }), {})).toThrow(
      "input upgrade-probe-command: applies to an upgrade, and upgrade-to is not given",
    );
  });
});

describe("the user's probe targets", () => {
  const signal = () => new AbortController().signal;

  it("a command is up on exit 0, down with its status and last line otherwise", async () => {
    await expect(commandTarget("exit 0").check(signal())).resolves.toBeUndefined();
    await expect(
      commandTarget("echo first; echo 'connection refused' >&2; exit 7").check(signal()),
    ).rejects.toThrow("the probe command exited with 7: connection refused");
  });

  it("a command still running when its sample ends is killed with its children", async () => {
    const stop = new AbortController();
    const marker = join(tmpdir(), `kubeforge-probe-${process.pid}-${Date.now()}`);
    // The child sleeps, then would write the marker: killed with the group, it never does.
    const check = commandTarget(`(sleep 1; touch ${marker}) & wait`).check(stop.signal);
    setTimeout(() => stop.abort(), 200);
    await expect(check).rejects.toThrow(/the probe command was killed by SIGKILL/);
    await new Promise((r) => setTimeout(r, 1300));
    await expect(import("node:fs/promises").then((f) => f.stat(marker))).rejects.toThrow(/ENOENT/);
  });

  it("a service-proxy request goes through the API client's proxy path", async () => {
    const paths: string[] = [];
    const client = {
      getRaw: (path: string) => {
        paths.push(path);
        return Promise.resolve({ status: 503, body: "no endpoints available" });
      },
    } as unknown as KubeClient;
    const t = userRequestTarget(client, {
      name: "shop/web",
      via: "service-proxy",
      namespace: "shop",
      service: "web",
      port: "http",
      path: "/healthz",
    });
    await expect(t.check(signal())).rejects.toThrow(
      "the service proxy answered 503: no endpoints available",
    );
    expect(paths).toEqual(["/api/v1/namespaces/shop/services/web:http/proxy/healthz"]);
  });

  it("objects created before a failure stay listed for the clean-up", async () => {
    const client = {
      resource: () => Promise.resolve({ namespaced: true }),
      create: (o: { metadata: { name: string } }) =>
        o.metadata.name === "second"
          ? Promise.reject(new Error("admission webhook denied it"))
          : Promise.resolve(o),
    } as unknown as KubeClient;
    const objects = ["first", "second", "third"].map((name) => ({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name },
    }));
    const created: ObjectRef[] = [];
    await expect(createUserObjects(client, objects, created)).rejects.toThrow(
      "creating ConfigMap second of the probe manifest: admission webhook denied it",
    );
    expect(created).toEqual([
      { apiVersion: "v1", kind: "ConfigMap", name: "first", namespace: "default" },
    ]);
  });

  it("a runner URL names itself in checks", () => {
    expect(runnerUrlTarget("default/front", "http://127.0.0.1:1/x")).toMatchObject({
      kind: "workload",
      checks: "GET http://127.0.0.1:1/x from the runner",
    });
  });
});
