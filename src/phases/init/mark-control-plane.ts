import { patchNode } from "../../kube/idempotency.js";
import {
  markControlPlaneMessages,
  markControlPlaneNode,
} from "../../manifests/control-plane-node.js";
import type { Phase } from "../../workflow/phase.js";
import { adminClient, apiCallOptions } from "./clients.js";
import type { InitData } from "./data.js";

// kubeadm's cmd/phases/init/markcontrolplane.go over phases/markcontrolplane: the control-plane
// labels and the configured taints, merged with what the Node has, sent as a strategic merge
// patch once the kubelet has registered the Node.

export const markControlPlanePhase: Phase<InitData> = {
  name: "mark-control-plane",
  short: "Mark a node as a control-plane",
  run: async (data, ctx) => {
    const { name, taints } = data.cfg.init.nodeRegistration;
    const client = await adminClient(data);
    for (const line of markControlPlaneMessages(name, taints)) ctx.log.info(line);
    await patchNode(
      client,
      name,
      (node) => markControlPlaneNode(node, taints),
      apiCallOptions(data),
    );
  },
};
