import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getInitSystem } from "../../../src/node/init-system.js";
import { LocalHost } from "../../../src/remote/local.js";
import { HostDouble, onPath, type CommandStub } from "../../support/host-double.js";

let root: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "kubeforge-initsystem-"));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

function host(commands: CommandStub[]) {
  return new HostDouble(new LocalHost({ rootfs: root }), {
    commands: [...commands, { match: () => true, result: { code: 0 } }],
  });
}

const changes = (h: HostDouble) =>
  h.calls
    .filter((c) => !c.opts.readOnly)
    .map((c) => `${c.argv.join(" ")}${c.opts.sudo ? " (sudo)" : ""}`);

describe("getInitSystem", () => {
  it("is systemd when systemctl is on the PATH; restart reloads units first, with sudo", async () => {
    const h = host([onPath("systemctl", "/usr/bin/systemctl")]);
    const init = await getInitSystem(h);
    expect(init?.name).toBe("systemd");
    await init!.serviceStop("kubelet");
    await init!.serviceRestart("kubelet");
    expect(changes(h)).toEqual([
      "systemctl stop kubelet (sudo)",
      "systemctl daemon-reload (sudo)",
      "systemctl restart kubelet (sudo)",
    ]);
  });

  it("reloads systemd's units on their own, and restarts without reloading again when told", async () => {
    const h = host([onPath("systemctl", "/usr/bin/systemctl")]);
    const init = await getInitSystem(h);
    await init!.reloadUnits();
    await init!.serviceRestart("kubelet", { unitsReloaded: true });
    expect(changes(h)).toEqual([
      "systemctl daemon-reload (sudo)",
      "systemctl restart kubelet (sudo)",
    ]);
  });

  it("has no units to reload under OpenRC", async () => {
    const h = host([onPath("systemctl", undefined), onPath("openrc", "/sbin/openrc")]);
    const init = await getInitSystem(h);
    await init!.reloadUnits();
    expect(changes(h)).toEqual([]);
  });

  it("is OpenRC when only openrc is on the PATH", async () => {
    const h = host([onPath("systemctl", undefined), onPath("openrc", "/sbin/openrc")]);
    const init = await getInitSystem(h);
    expect(init?.name).toBe("openrc");
    await init!.serviceStop("kubelet");
    await init!.serviceRestart("kubelet");
    expect(changes(h)).toEqual([
      "rc-service kubelet stop (sudo)",
      "rc-service kubelet restart (sudo)",
    ]);
    expect(init!.enableCommand("kubelet")).toBe("rc-update add kubelet default");
  });

  it("is undefined when neither is installed", async () => {
    expect(
      await getInitSystem(host([onPath("systemctl", undefined), onPath("openrc", undefined)])),
    ).toBeUndefined();
  });

  it("names the command and the host when a change fails", async () => {
    const h = host([
      onPath("systemctl", "/usr/bin/systemctl"),
      {
        match: ["systemctl", "restart"],
        result: { code: 1, stderr: "Unit kubelet.service not found." },
      },
    ]);
    const init = await getInitSystem(h);
    await expect(init!.serviceRestart("kubelet")).rejects.toThrow(
      /^failed to restart kubelet: .*"systemctl restart kubelet" exited with code 1: Unit kubelet\.service not found\.$/,
    );
  });

  it("counts an activating service as active, as kubeadm", async () => {
    const h = host([
      onPath("systemctl", "/usr/bin/systemctl"),
      { match: ["systemctl", "is-active"], result: { code: 3, stdout: "activating\n" } },
    ]);
    expect(await (await getInitSystem(h))!.serviceIsActive("kubelet")).toBe(true);
  });
});
