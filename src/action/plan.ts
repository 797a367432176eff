import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import type { UpNode, UpPlan } from "../cluster/up/index.js";
import { renderPlan, renderPlannedNode } from "../cluster/up/plan.js";
import { writeRunnerFile } from "../remote/runner-files.js";

// What `up --dry-run` planned, saved for the action's outputs: the whole plan as people read it
// (plan.yaml), each node's part on its own (plan/<node>.yaml: its header line and the kubeadm
// documents it would get, secrets replaced by placeholders), and the action each node would get,
// as a live run reports the action it took.

/** The action a node would get, in a live run's words (init, join or none). */
export function plannedAction(action: UpPlan["nodes"][number]["action"]): UpNode["action"] {
  return action === "none" ? "none" : action.endsWith("init") ? "init" : "join";
}

export async function savePlan(
  plan: UpPlan,
  files: { planFile: string; nodeDir: string },
): Promise<UpNode[]> {
  await writeRunnerFile(files.planFile, renderPlan(plan), 0o600);
  await mkdir(files.nodeDir, { recursive: true, mode: 0o700 });
  for (const n of plan.nodes) {
    if (n.documents) {
      await writeRunnerFile(join(files.nodeDir, `${n.name}.yaml`), renderPlannedNode(n), 0o600);
    }
  }
  return plan.nodes.map((n) => ({
    name: n.name,
    role: n.role,
    address: n.address,
    action: plannedAction(n.action),
  }));
}
