import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { claimStateFolder } from "../../../src/action/state-folder.js";
import type { ClusterSpec } from "../../../src/config/cluster/types.js";
import { testDir } from "../../support/temp-dir.js";

// A state folder belongs to one cluster: the same cluster may come back to it, another cluster
// given the same name is refused before anything in the folder is overwritten.

const recorded = async (dir: string) =>
  JSON.parse(await readFile(join(dir, "cluster.json"), "utf8")) as {
    cluster: string;
    firstControlPlane: string;
  };

function spec(name: string, firstHost: string): ClusterSpec {
  return {
    name,
    nodes: [
      { name: "w", role: "worker", host: "ssh://root@10.0.0.9" },
      { name: "cp", role: "control-plane", host: firstHost },
    ],
  } as ClusterSpec;
}

describe("claimStateFolder", () => {
  it("records the owner, lets the same cluster in again, refuses another of the same name", async () => {
    const dir = await testDir("kubeforge-state-");
    await claimStateFolder(dir, spec("ci", "ssh://root@10.0.0.1"));
    expect(await recorded(dir)).toEqual({
      cluster: "ci",
      firstControlPlane: "ssh://root@10.0.0.1",
    });
    await claimStateFolder(dir, spec("ci", "ssh://root@10.0.0.1"));
    await expect(claimStateFolder(dir, spec("ci", "ssh://root@10.0.0.2"))).rejects.toThrow(
      `the folder ${dir} holds another cluster named "ci" (first control plane ssh://root@10.0.0.1; this one's is ssh://root@10.0.0.2), built by an earlier step of this job: give this step a different \`name\` input`,
    );
    // The refusal leaves the record as it was.
    expect((await recorded(dir)).firstControlPlane).toBe("ssh://root@10.0.0.1");
  });

  it("takes over a folder without a readable record", async () => {
    const dir = await testDir("kubeforge-state-");
    await writeFile(join(dir, "cluster.json"), "not json");
    await claimStateFolder(dir, spec("ci", "local"));
    expect((await recorded(dir)).firstControlPlane).toBe("local");
  });
});
