import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestbed, type SshTestbed } from "../../support/testbed.js";
import { clusterFile, diagnostics, runner, type Runner } from "./support.js";

// `kubeforge up` against inputs and hosts that would once corrupt a node or hang a run, over
// real SSH on the testbed.

let bed: SshTestbed;
let r: Runner;

beforeAll(async () => {
  [bed, r] = await Promise.all([createTestbed(["cp-1", "w-1"], { ssh: true }), runner()]);
}, 300_000);

afterAll(async () => {
  await bed?.stop();
}, 120_000);

describe("a sudo password written as a YAML block (with its trailing new line)", () => {
  it("reaches sudo as one line: every file written through it lands whole", async () => {
    const w1 = bed.host("w-1");
    const text = clusterFile({
      name: "sudo-block",
      controlPlanes: [bed.host("cp-1")],
      workers: [w1],
      // w-1's login is the testbed user whose sudo asks for the password.
      userFor: (h) => (h === w1 ? h.ssh.passwordSudoUser : "root"),
      ssh: ["sudoPassword: |", `  ${w1.ssh.password}`],
    });
    const path = await r.writeClusterFile(text, "sudo-block.yaml");
    const kubeconfig = join(r.dir, "sudo-block.conf");
    const up = await r.kubeforge(["up", "-f", path, "--kubeconfig", kubeconfig]);
    if (up.code !== 0) throw new Error(await diagnostics(bed, up));
    // Written on w-1 through `sudo -S`: the CA, the kubelet's kubeconfig and configuration.
    const ca = await readFile(w1.path("etc/kubernetes/pki/ca.crt"), "utf8");
    expect(ca).toBe(await readFile(bed.host("cp-1").path("etc/kubernetes/pki/ca.crt"), "utf8"));
    expect(ca.startsWith("-----BEGIN CERTIFICATE-----\n")).toBe(true);
    expect(await readFile(w1.path("etc/kubernetes/kubelet.conf"), "utf8")).toMatch(/^apiVersion: /);
    expect(await readFile(w1.path("var/lib/kubelet/config.yaml"), "utf8")).toMatch(/^apiVersion: /);
    expect(up.stderr).not.toContain(w1.ssh.password);
    const down = await r.kubeforge(["down", "-f", path]);
    expect(down.code, down.stderr).toBe(0);
  }, 420_000);
});
