import { describe, expect, it } from "vitest";
import { apiCallOptions } from "../../../../src/phases/init/clients.js";
import { testInitData } from "../../../support/init-fixtures.js";
import type { UpgradeData } from "../../../../src/phases/upgrade/data.js";
import { upgradeInitView } from "../../../../src/phases/upgrade/init-view.js";
import { LocalHost } from "../../../../src/remote/local.js";

// The init phases upgrade runs (upload-config, the addons, the RBAC rules) re-apply objects
// init made: through the upgrade's view their writes update first. A dry run keeps kubeadm's
// order, so that its lines are kubeadm's ("Would perform action CREATE"); init itself creates
// first.

function upgradeData(dryRun: boolean): UpgradeData {
  const init = testInitData(new LocalHost());
  return { ...init, dryRun, cluster: init.api, now: () => new Date() } as unknown as UpgradeData;
}

describe("the upgrade's view of init's phases", () => {
  it("updates first on a real run", () => {
    expect(apiCallOptions(upgradeInitView(upgradeData(false))).updateFirst).toBe(true);
  });

  it("creates first in a dry run, as init does", () => {
    expect(apiCallOptions(upgradeInitView(upgradeData(true))).updateFirst).toBeUndefined();
    expect(apiCallOptions(testInitData(new LocalHost())).updateFirst).toBeUndefined();
  });
});
