import { describe, expect, it } from "vitest";
import { readInputs } from "../../../src/action/inputs.js";
import { settleHop } from "../../../src/action/upgrade.js";
import { defaultClusterSpec } from "../../../src/config/cluster/load.js";
import type { Reporter } from "../../../src/workflow/reporter.js";

// The upgrade rehearsal's inputs: upgrade-to in the forms kubernetes-version takes, the CLI's
// --worker-batch and --drain-timeout defaults (cli/upgrade-cluster.ts: 1 and 5m), and every bad
// value refused with one sentence that starts with the input, before any host is contacted.

const inputsOf = (values: Record<string, string>) => (name: string) => values[name] ?? "";
const read = (values: Record<string, string>) => readInputs(inputsOf(values), {});

/** The probes the action runs unless told otherwise: the API, every 500ms, no threshold. */
const API_PROBES = { apiProbes: { intervalMs: 500, keep: false }, thresholds: {} };

describe("readInputs: upgrade-to, upgrade-worker-batch, upgrade-drain-timeout", () => {
  it("no upgrade when upgrade-to is not given", () => {
    expect(read({}).upgrade).toBeUndefined();
  });

  it("takes the CLI's defaults: one worker at a time, 5m per drain, the API probed", () => {
    expect(read({ "upgrade-to": "v1.36.3" }).upgrade).toEqual({
      to: "v1.36.3",
      workerBatch: 1,
      drainTimeoutMs: 300_000,
      probes: API_PROBES,
    });
  });

  it("takes upgrade-probes and upgrade-max-api-downtime as --probe and --max-api-downtime", () => {
    expect(read({ "upgrade-to": "1.36", "upgrade-probes": "none" }).upgrade?.probes).toEqual({
      thresholds: {},
    });
    expect(
      read({ "upgrade-to": "1.36", "upgrade-probes": "api", "upgrade-max-api-downtime": "5s" })
        .upgrade?.probes,
    ).toEqual({ ...API_PROBES, thresholds: { maxApiDowntime: { text: "5s", ms: 5000 } } });
    expect(
      read({
        "upgrade-to": "1.36",
        "upgrade-probes": "api, workload",
        "upgrade-max-workload-error-rate": "0.5%",
        "upgrade-max-workload-downtime": "3s",
      }).upgrade?.probes,
    ).toEqual({
      ...API_PROBES,
      workloadProbes: { intervalMs: 500, keep: false, settleMs: 300_000 },
      thresholds: {
        maxWorkloadErrorRate: { text: "0.5%", rate: 0.005 },
        maxWorkloadDowntime: { text: "3s", ms: 3000 },
      },
    });
  });

  it("takes upgrade-to as kubernetes-version takes it, and the settings", () => {
    expect(
      read({
        "upgrade-to": " 1.36 ",
        "upgrade-worker-batch": "3",
        "upgrade-drain-timeout": "1m30s",
      }).upgrade,
    ).toEqual({ to: "stable-1.36", workerBatch: 3, drainTimeoutMs: 90_000, probes: API_PROBES });
    expect(read({ "upgrade-to": "1.36.2" }).upgrade?.to).toBe("v1.36.2");
    expect(read({ "upgrade-to": "stable-1.36" }).upgrade?.to).toBe("stable-1.36");
  });

  it("takes upgrade-kubelet-binary as --kubelet-binary: a runner path resolved, an URL as given", () => {
    const env = { GITHUB_WORKSPACE: "/home/runner/work/repo" };
    const withKubelet = (kubelet: string) =>
      readInputs(inputsOf({ "upgrade-to": "1.36", "upgrade-kubelet-binary": kubelet }), env).upgrade
        ?.kubeletBinary;
    expect(withKubelet("_output/bin/kubelet")).toBe("/home/runner/work/repo/_output/bin/kubelet");
    expect(withKubelet("/opt/kubelet")).toBe("/opt/kubelet");
    const url = `https://example.com/kubelet#sha256=${"a".repeat(64)}`;
    expect(withKubelet(url)).toBe(url);
    // kubelet-binary is the build of kubernetes-version `up` installs: not the upgrade's.
    expect(
      readInputs(inputsOf({ "upgrade-to": "1.36", "kubelet-binary": "/opt/kubelet" }), env).upgrade
        ?.kubeletBinary,
    ).toBeUndefined();
  });

  it.each([
    [
      { "upgrade-kubelet-binary": "/opt/kubelet" },
      /^input upgrade-kubelet-binary: applies to an upgrade, and upgrade-to is not given$/,
    ],
    [
      { "upgrade-to": "one-thirty-six" },
      /^input upgrade-to: "one-thirty-six" is neither a version/,
    ],
    [{ "upgrade-to": "v1.99.0" }, /^input upgrade-to: .*v1\.99\.0 is not supported/],
    [
      { "upgrade-to": "1.36", "upgrade-worker-batch": "0" },
      /^input upgrade-worker-batch: "0" is not a whole number of at least 1$/,
    ],
    [
      { "upgrade-to": "1.36", "upgrade-worker-batch": "two" },
      /^input upgrade-worker-batch: "two" is not a whole number of at least 1$/,
    ],
    [
      { "upgrade-to": "1.36", "upgrade-drain-timeout": "5 minutes" },
      /^input upgrade-drain-timeout: "5 minutes" is not a positive Go duration/,
    ],
    [
      { "upgrade-to": "1.36", "upgrade-drain-timeout": "0s" },
      /^input upgrade-drain-timeout: "0s" is not a positive Go duration/,
    ],
    [
      { "upgrade-worker-batch": "2" },
      /^input upgrade-worker-batch: applies to an upgrade, and upgrade-to is not given$/,
    ],
    [
      { "upgrade-drain-timeout": "1m" },
      /^input upgrade-drain-timeout: applies to an upgrade, and upgrade-to is not given$/,
    ],
    [
      { "upgrade-to": "1.36", "upgrade-probes": "api,dnz" },
      /^input upgrade-probes: "dnz" is not a probe kubeforge has; give api, workload, dns \(a list\) or none$/,
    ],
    [
      { "upgrade-to": "1.36", "upgrade-probes": "api,dns" },
      /^input upgrade-probes: dns looks up from the workload canary's Pods; name workload too \(api,workload,dns\)$/,
    ],
    [
      { "upgrade-to": "1.36", "upgrade-probes": "none", "upgrade-max-api-downtime": "5s" },
      /^input upgrade-max-api-downtime: needs the api probe, and input upgrade-probes does not name it$/,
    ],
    [
      { "upgrade-to": "1.36", "upgrade-max-workload-error-rate": "1%" },
      /^input upgrade-max-workload-error-rate: needs the workload probe, and input upgrade-probes does not name it$/,
    ],
    [
      {
        "upgrade-to": "1.36",
        "upgrade-probes": "api,workload",
        "upgrade-max-workload-error-rate": "lots",
      },
      /^input upgrade-max-workload-error-rate: "lots" is not an error rate/,
    ],
    [
      { "upgrade-max-workload-downtime": "5s" },
      /^input upgrade-max-workload-downtime: applies to an upgrade, and upgrade-to is not given$/,
    ],
    [
      { "upgrade-to": "1.36", "upgrade-max-api-downtime": "five seconds" },
      /^input upgrade-max-api-downtime: "five seconds" is not a valid duration/,
    ],
    [
      { "upgrade-max-api-downtime": "5s" },
      /^input upgrade-max-api-downtime: applies to an upgrade, and upgrade-to is not given$/,
    ],
    [
      { "upgrade-to": "1.36", "install-only": "true" },
      /^input upgrade-to: install-only builds no cluster, so there is nothing to upgrade$/,
    ],
  ])("refuses %j with one sentence naming the input", (values, message) => {
    expect(() => read(values)).toThrow(message);
    // One sentence: no second line.
    try {
      read(values);
    } catch (e) {
      expect((e as Error).message).not.toContain("\n");
    }
  });
});

describe("settleHop: upgrade-to against the version the cluster is built at", () => {
  const warnings: string[] = [];
  const reporter = { warn: (m: string) => warnings.push(m) } as unknown as Reporter;
  const hop = (from: string, to: string) =>
    settleHop({
      spec: { ...defaultClusterSpec(), name: "ci", kubernetesVersion: from },
      upgrade: { to, workerBatch: 1, drainTimeoutMs: 300_000, probes: { thresholds: {} } },
      reporter,
      env: {},
    });

  it("settles one minor up, and a patch", async () => {
    await expect(hop("v1.35.0", "v1.36.3")).resolves.toMatchObject({
      from: "v1.35.0",
      to: "v1.36.3",
    });
    await expect(hop("v1.35.0", "v1.35.2")).resolves.toMatchObject({
      from: "v1.35.0",
      to: "v1.35.2",
    });
  });

  // The CLI's refusals (cluster/upgrade/policy.ts), naming the input instead of --to.
  it("refuses two minors, naming the minor to upgrade to first", async () => {
    await expect(hop("v1.35.0", "v1.37.0")).rejects.toThrow(
      "input upgrade-to: upgrade-to v1.37.0 is 2 minors above the cluster's v1.35.0: kubeforge upgrades one minor per hop; upgrade to v1.36 first, or give upgrade-via auto to go through every minor in one run; nothing was changed",
    );
  });

  it("refuses a downgrade", async () => {
    await expect(hop("v1.35.2", "v1.34.2")).rejects.toThrow(
      /^input upgrade-to: kubeforge does not downgrade: the cluster "ci" runs v1\.35\.2 and upgrade-to asks for v1\.34\.2;/,
    );
  });

  it("settles a CI build: a pre-release, asked for by name", async () => {
    await expect(hop("v1.35.0", "ci/v1.36.0-alpha.2.34+0123456789abcd")).resolves.toMatchObject({
      from: "v1.35.0",
      to: "v1.36.0-alpha.2.34+0123456789abcd",
      ciBuild: true,
    });
  });

  it("refuses a pre-release", async () => {
    await expect(hop("v1.35.0", "v1.36.0-rc.1")).rejects.toThrow(
      /^input upgrade-to: v1\.36\.0-rc\.1 is a pre-release; the action upgrades to releases and to Kubernetes' CI builds \(ci\/latest-1\.37\) only/,
    );
  });
});
