// The simulated API server's Service allocation (test/support/sim/apiserver/service-allocation.ts)
// through its object store: a NodePort Service gets a node port of --service-node-port-range
// (default 30000-32767) and a clusterIP of --service-cluster-ip-range; a requested port is kept;
// one out of the range or already held is refused with kube-apiserver's 422 message
// (pkg/registry/core/service/portallocator/allocator.go ErrNotInRange, ErrAllocated, wrapped by
// pkg/registry/core/service/storage/alloc.go as field.Invalid on spec.ports[i].nodePort).
import { describe, expect, it } from "vitest";
import { apiServerOptionsFromCommand } from "../../support/sim/apiserver/flags.js";
import { parsePortRange } from "../../support/sim/apiserver/service-allocation.js";
import { ObjectStore, type StoredObject } from "../../support/sim/apiserver/store.js";

interface Spec {
  type?: string;
  clusterIP?: string;
  clusterIPs?: string[];
  externalTrafficPolicy?: string;
  ports: { name?: string; port: number; nodePort?: number }[];
}

function service(name: string, spec: Partial<Spec> = {}) {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name, namespace: "default" },
    spec: { type: "NodePort", ports: [{ name: "http", port: 80 }], ...spec },
  };
}

const specOf = (o: StoredObject): Spec => o.spec as Spec;
const ranges = { clusterIPRange: "10.96.0.0/12" };

describe("the simulated API server's Service allocation", () => {
  it("gives a NodePort Service a port of 30000-32767 and a clusterIP of the service range", () => {
    const store = new ObjectStore({ systemNamespaces: true });
    const spec = specOf(store.create(service("web"), { serviceRanges: ranges }));
    const nodePort = spec.ports[0]!.nodePort!;
    expect(nodePort).toBeGreaterThanOrEqual(30000);
    expect(nodePort).toBeLessThanOrEqual(32767);
    expect(spec.clusterIP).toMatch(/^10\.(9[6-9]|10[0-9]|11[01])\.\d+\.\d+$/);
    expect(spec.clusterIPs).toEqual([spec.clusterIP]);
    // SetDefaults_Service: externalTrafficPolicy Cluster for NodePort.
    expect(spec.externalTrafficPolicy).toBe("Cluster");
  });

  it("gives no node port to a ClusterIP Service, and defaults type to ClusterIP", () => {
    const store = new ObjectStore({ systemNamespaces: true });
    const created = store.create(service("plain", { type: undefined }), { serviceRanges: ranges });
    expect(specOf(created).type).toBe("ClusterIP");
    expect(specOf(created).ports[0]!.nodePort).toBeUndefined();
  });

  it("keeps a requested port, refuses it to a second Service, and refuses one out of the range", () => {
    const store = new ObjectStore({ systemNamespaces: true });
    const asked = service("first", { ports: [{ name: "http", port: 80, nodePort: 30080 }] });
    expect(specOf(store.create(asked)).ports[0]!.nodePort).toBe(30080);
    const again = service("second", { ports: [{ name: "http", port: 80, nodePort: 30080 }] });
    expect(() => store.create(again)).toThrow(
      'Service "second" is invalid: spec.ports[0].nodePort: Invalid value: 30080: provided port is already allocated',
    );
    const low = service("low", { ports: [{ name: "http", port: 80, nodePort: 29999 }] });
    expect(() => store.create(low)).toThrow(
      'Service "low" is invalid: spec.ports[0].nodePort: Invalid value: 29999: provided port is not in the valid range. The range of valid ports is 30000-32767',
    );
    try {
      store.create(low);
    } catch (e) {
      expect((e as { status: { code: number; reason: string } }).status).toMatchObject({
        code: 422,
        reason: "Invalid",
      });
    }
  });

  it("keeps the allocated port (by port name) and clusterIP on an update that leaves them out", () => {
    const store = new ObjectStore({ systemNamespaces: true });
    const created = specOf(store.create(service("web"), { serviceRanges: ranges }));
    // The port's number changes, its name stays (pkg/registry/core/service/storage/storage.go
    // patchAllocatedValues maps node ports by name).
    const update = service("web", { ports: [{ name: "http", port: 8080 }] });
    const updated = specOf(store.update(update, { serviceRanges: ranges }));
    expect(updated.ports[0]!.nodePort).toBe(created.ports[0]!.nodePort);
    expect(updated.clusterIP).toBe(created.clusterIP);
  });

  it("allocates from --service-node-port-range", () => {
    const opts = apiServerOptionsFromCommand(
      [
        "kube-apiserver",
        "--tls-cert-file=/c",
        "--tls-private-key-file=/k",
        "--client-ca-file=/ca",
        "--service-node-port-range=31000-31001",
      ],
      (p) => p,
    );
    expect(opts.serviceNodePortRange).toEqual({ base: 31000, size: 2 });
    const store = new ObjectStore({ systemNamespaces: true });
    const serviceRanges = { nodePortRange: opts.serviceNodePortRange! };
    const ports = ["a", "b"].map(
      (n) => specOf(store.create(service(n), { serviceRanges })).ports[0]!.nodePort,
    );
    expect(ports.sort()).toEqual([31000, 31001]);
    expect(() => store.create(service("c"), { serviceRanges })).toThrow(/range is full/);
    expect(parsePortRange("30000+2767")).toEqual({ base: 30000, size: 2768 });
  });
});
