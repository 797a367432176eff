import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { prepareInit, type InitRequest } from "../../../src/cluster/init.js";
import { detectAdvertiseAddress } from "../../../src/node/address.js";
import { LocalHost } from "../../../src/remote/local.js";
import { summarizeTimings } from "../../../src/workflow/runner.js";
import { recordingLogger } from "../../support/init-fixtures.js";

let rootfs: string;
beforeAll(async () => {
  rootfs = await mkdtemp(join(tmpdir(), "kubeforge-prepare-"));
});
afterAll(async () => {
  await rm(rootfs, { recursive: true, force: true });
});

function request(overrides: Partial<InitRequest> = {}): InitRequest {
  return {
    flags: { kubernetesVersion: "v1.35.0", apiserverAdvertiseAddress: "10.0.0.10" },
    host: new LocalHost({ rootfs }),
    dryRun: false,
    reporter: { ...recordingLogger(), group: (_t, fn) => fn(), mask: () => undefined },
    env: {},
    stdout: () => undefined,
    ...overrides,
  };
}

describe("prepareInit", () => {
  it("copies every *_proxy variable of kubeforge's environment, in any case, as kubeadm", async () => {
    const { data } = await prepareInit(
      request({
        env: {
          HTTPS_PROXY: "http://p:3128",
          no_proxy: "10.0.0.0/8",
          ALL_PROXY: "socks5://s",
          EMPTY_PROXY: "",
          PATH: "/bin",
        },
      }),
    );
    expect(data.proxyEnv).toEqual({
      HTTPS_PROXY: "http://p:3128",
      no_proxy: "10.0.0.0/8",
      ALL_PROXY: "socks5://s",
    });
  });

  it("uses a given advertise address and detects one only when it is unspecified", async () => {
    const given = await prepareInit(request());
    expect(given.data.cfg.init.localAPIEndpoint.advertiseAddress).toBe("10.0.0.10");
    const detected = await prepareInit(
      request({ flags: { kubernetesVersion: "v1.35.0", apiserverAdvertiseAddress: "0.0.0.0" } }),
    );
    expect(detected.data.cfg.init.localAPIEndpoint.advertiseAddress).toBe(
      await detectAdvertiseAddress(new LocalHost()),
    );
  });

  it("dates every certificate of a run by one instant", async () => {
    const { data } = await prepareInit(request());
    const first = data.now();
    await new Promise((r) => setTimeout(r, 5));
    expect(data.now()).toBe(first);
  });

  it("refuses an invalid configuration with every problem and writes nothing", async () => {
    const err = await prepareInit(
      request({
        flags: {
          kubernetesVersion: "v1.35.0",
          apiserverAdvertiseAddress: "10.0.0.10",
          podNetworkCidr: "10.244.0.0/33",
          serviceDnsDomain: "bad_domain",
        },
      }),
    ).catch((e: unknown) => e as Error);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message.split("\n").length).toBeGreaterThanOrEqual(2);
    expect((err as Error).message).toMatch(/podSubnet/);
    expect((err as Error).message).toMatch(/dnsDomain/);
    expect(await new LocalHost({ rootfs }).readDir("/")).toEqual([]);
  });
});

describe("summarizeTimings", () => {
  it("lists top-level phases with their times and outcomes", () => {
    expect(
      summarizeTimings([
        { path: "certs/ca", outcome: "done", startedAt: 0, ms: 100 },
        { path: "certs", outcome: "done", startedAt: 0, ms: 860 },
        { path: "etcd", outcome: "failed", startedAt: 0, ms: 12 },
        { path: "addon", outcome: "pending", startedAt: 0, ms: 0 },
      ]),
    ).toBe("certs 0.86s, etcd 0.01s (failed), addon (pending)");
  });

  it("lists sub-phases when only those ran", () => {
    expect(summarizeTimings([{ path: "certs/ca", outcome: "done", startedAt: 0, ms: 1234 }])).toBe(
      "certs/ca 1.23s",
    );
  });
});
