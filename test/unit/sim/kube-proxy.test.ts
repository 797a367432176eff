// The simulated kube-proxy's reading of Services and Endpoints (test/support/sim/kubelet/
// kube-proxy.ts): only NodePort and LoadBalancer Services' TCP ports with a nodePort are served
// (k8s docs "Service": type NodePort; pkg/proxy/iptables/proxier.go serves nodePorts of those),
// forwarding to the ready addresses of the Endpoints port of the Service port's name.
import { describe, expect, it } from "vitest";
import { nodePortRules, readyEndpoints } from "../../support/sim/kubelet/kube-proxy.js";

const meta = (name: string) => ({ name, namespace: "ns" });

describe("the simulated kube-proxy's rules", () => {
  it("serves the nodePorts of NodePort and LoadBalancer Services, TCP only", () => {
    expect(
      nodePortRules([
        {
          metadata: meta("np"),
          spec: { type: "NodePort", ports: [{ name: "http", nodePort: 30080 }] },
        },
        { metadata: meta("lb"), spec: { type: "LoadBalancer", ports: [{ nodePort: 30081 }] } },
        {
          metadata: meta("udp"),
          spec: { type: "NodePort", ports: [{ nodePort: 30082, protocol: "UDP" }] },
        },
        { metadata: meta("cip"), spec: { type: "ClusterIP", ports: [{ name: "http" }] } },
        { metadata: meta("none"), spec: { type: "NodePort", ports: [{ name: "x" }] } },
      ]),
    ).toEqual([
      { name: "np", namespace: "ns", portName: "http", nodePort: 30080 },
      { name: "lb", namespace: "ns", portName: "", nodePort: 30081 },
    ]);
  });

  it("forwards to the ready addresses of the port of the same name, none without one", () => {
    const eps = {
      subsets: [
        {
          addresses: [{ ip: "10.0.0.5" }, { ip: "10.0.0.6" }],
          ports: [{ name: "http", port: 8080 }],
        },
        { addresses: [{ ip: "10.0.0.7" }], ports: [{ name: "metrics", port: 9090 }] },
      ],
    };
    expect(readyEndpoints(eps, "http")).toEqual([
      { host: "10.0.0.5", port: 8080 },
      { host: "10.0.0.6", port: 8080 },
    ]);
    expect(readyEndpoints(eps, "grpc")).toEqual([]);
    expect(readyEndpoints({ subsets: [] }, "http")).toEqual([]);
    expect(readyEndpoints(undefined, "http")).toEqual([]);
  });
});
