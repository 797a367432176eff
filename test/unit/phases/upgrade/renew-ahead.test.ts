import { rm } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { certsPhase } from "../../../../src/phases/init/certs.js";
import { kubeconfigPhase } from "../../../../src/phases/init/kubeconfig.js";
import {
  renewAhead,
  renewCertsByComponent,
  renewUsingLocalCA,
  type RenewalContext,
} from "../../../../src/phases/upgrade/renew.js";
import {
  baseInitConfig,
  runPhase,
  tempRootHost,
  testInitData,
  testRelease,
} from "../../../support/init-fixtures.js";
import { CountingKeys } from "../../../support/counting-keys.js";

// A control plane's upgrade renews etcd's three certificates before etcd's restart, then the API
// server's four, controller-manager.conf, scheduler.conf, admin.conf and super-admin.conf (where
// it exists; `init` writes it on the first control plane), each with a new key (kubeadm's renewCertsByComponent and RenewUsingLocalCA). renewAhead starts
// them ahead of their turns and only etcd's keys before etcd restarts: the others' key
// generation goes into etcd's restart, where the CPU has nothing else to do. The keys the
// renewals take are counted through the KeySource; the PKI and kubeconfigs are `init`'s, on a
// temporary root (ECDSA keys: quick to make, and the algorithm changes nothing here).

const cfg = () =>
  baseInitConfig({}, (c) => {
    c.cluster.encryptionAlgorithm = "ECDSA-P256";
  });

let root: string;
let cleanup: () => Promise<void>;
let keys: CountingKeys;
let ctx: RenewalContext;

beforeEach(async () => {
  const made = await tempRootHost();
  root = made.root;
  cleanup = made.cleanup;
  const data = testInitData(made.host, cfg());
  await runPhase(certsPhase, data);
  await runPhase(kubeconfigPhase, data);
  keys = new CountingKeys();
  ctx = { host: made.host, cfg: cfg(), release: testRelease(), keys, now: new Date() };
});
afterEach(() => cleanup());

/** Waits until the renewals started ahead took `n` keys, then a little longer for any more. */
async function takenBy(n: number): Promise<number> {
  await vi.waitFor(() => expect(keys.taken).toBeGreaterThanOrEqual(n), { timeout: 10_000 });
  await new Promise((resolve) => setTimeout(resolve, 100));
  return keys.taken;
}

describe("renewAhead", () => {
  it("with a turn for etcd, takes etcd's three keys at once and the eight others only when told", async () => {
    const later = renewAhead(ctx, true);
    expect(keys.prefetches).toEqual([3]);
    expect(await takenBy(3)).toBe(3);

    later();
    later(); // once only
    // 4 for the API server, controller-manager.conf, scheduler.conf, admin.conf, super-admin.conf.
    expect(keys.prefetches).toEqual([3, 8]);
    expect(await takenBy(11)).toBe(11);
  });

  it("without a turn for etcd, starts every other renewal at once and none of etcd's", async () => {
    const later = renewAhead(ctx, false);
    expect(keys.prefetches).toEqual([8]);
    expect(await takenBy(8)).toBe(8);
    later();
    expect(keys.prefetches).toEqual([8]);
    expect(await takenBy(8)).toBe(8);
  });

  it("takes no key for super-admin.conf where it does not exist (only the first control plane has it)", async () => {
    await rm(join(root, "etc/kubernetes/super-admin.conf"));
    renewAhead(ctx, false);
    expect(await takenBy(7)).toBe(7);
  });

  it("leaves each renewal to be written at its turn, with the keys prepared ahead", async () => {
    const later = renewAhead(ctx, true);
    await renewCertsByComponent(ctx, "etcd", () => {});
    later();
    await renewCertsByComponent(ctx, "kube-apiserver", () => {});
    expect(await renewUsingLocalCA(ctx, "admin.conf")).toBe(true);
    expect(await renewUsingLocalCA(ctx, "super-admin.conf")).toBe(true);
    // Each renewal took one key, when it was prepared ahead: none was prepared again at its turn.
    expect(await takenBy(11)).toBe(11);
    expect(keys.prefetches).toEqual([3, 8]);
  });
});
