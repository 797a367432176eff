import type { UpNode } from "../cluster/up/index.js";

// What `up --dry-run` renders, read back for the action's outputs. up prints one plan: a header
// line, then per node a comment "# <name> (<role>, <host>, <address>): <action>" followed by the
// kubeadm documents that node would be given (secrets already replaced by placeholders), each
// node's part ended by "---". The action saves the whole plan and each node's part on its own,
// and reports the action each node would get, as a live run reports the action it took.

export interface PlannedNode {
  name: string;
  role: UpNode["role"];
  address: string;
  /** As up words it: init, join, reset+init, reset+join, or "finished earlier, nothing to do". */
  plan: string;
  action: UpNode["action"];
  /** The kubeadm documents for this node (its header comment first); "" when nothing to do. */
  documents: string;
}

const NODE_HEADER = /^# (\S+) \((control-plane|worker), .*, ([^,]*)\): (.*)$/;

function actionOf(plan: string): UpNode["action"] {
  if (plan.endsWith("init")) return "init";
  if (plan.endsWith("join")) return "join";
  return "none";
}

/** The nodes of a plan, in its order. Lines before the first node header are left out. */
export function parsePlan(text: string): PlannedNode[] {
  const nodes: PlannedNode[] = [];
  let current: { node: PlannedNode; lines: string[] } | undefined;
  const finish = () => {
    if (!current) return;
    const lines = current.lines;
    while (lines.length > 1 && (lines.at(-1) === "---" || lines.at(-1) === "")) lines.pop();
    current.node.documents = current.node.action === "none" ? "" : `${lines.join("\n")}\n`;
    nodes.push(current.node);
  };
  for (const line of text.split("\n")) {
    const m = NODE_HEADER.exec(line);
    if (m) {
      finish();
      const plan = m[4]!;
      current = {
        node: {
          name: m[1]!,
          role: m[2] as UpNode["role"],
          address: m[3]!,
          plan,
          action: actionOf(plan),
          documents: "",
        },
        lines: [line],
      };
    } else if (current) {
      current.lines.push(line);
    }
  }
  finish();
  return nodes;
}
