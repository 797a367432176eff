// SIMULATION (test double): the simulated kubelet of kubeforge's tests. Not a kubelet.
// See kubelet.ts for what it does and the Kubernetes sources each behaviour follows.

export { SimulatedKubelet } from "./kubelet.js";
export type { SimulatedKubeletOptions, SimulatedKubeletStatus } from "./kubelet.js";
export { bundleSimKubelet } from "./bundle.js";
export {
  installServiceManagerShim,
  serviceManagerPaths,
  simulatedNode,
} from "./service-manager.js";
export type {
  ServiceManagerShimOptions,
  SimulatedNode,
  SimulatedNodeOptions,
} from "./service-manager.js";
export type { PodStatus, ContainerStatus } from "./runtime.js";
export type { NodeFaults } from "./faults.js";
export { installedKubelet } from "./binary.js";
