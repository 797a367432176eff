import { describe, expect, it } from "vitest";
import {
  argsFromMap,
  convertClusterConfigurationV1beta3,
  convertInitConfigurationV1beta3,
  convertJoinConfigurationV1beta3,
} from "../../../src/config/convert-v1beta3.js";

describe("v1beta3 → v1beta4 conversion (kubeadm apis/kubeadm/v1beta3/conversion.go)", () => {
  it("convertToArgs: sorted by name, bytewise like Go (upper case before lower case)", () => {
    expect(argsFromMap({ "b-flag": "1", Zeta: "2", "a-flag": "3", "a-flag2": "" })).toEqual([
      { name: "Zeta", value: "2" },
      { name: "a-flag", value: "3" },
      { name: "a-flag2", value: "" },
      { name: "b-flag", value: "1" },
    ]);
    expect(argsFromMap(undefined)).toBeUndefined();
    expect(argsFromMap({})).toEqual([]);
  });

  it("carries apiServer.timeoutForControlPlane over only when it is not zero", () => {
    expect(
      convertClusterConfigurationV1beta3({ apiServer: { timeoutForControlPlane: "6m0s" } }),
    ).toEqual({
      cluster: { apiServer: {} },
      timeoutForControlPlane: "6m0s",
    });
    expect(
      convertClusterConfigurationV1beta3({ apiServer: { timeoutForControlPlane: "0s" } }),
    ).toEqual({
      cluster: { apiServer: {} },
    });
  });

  it("leaves external etcd and other fields alone", () => {
    const external = {
      endpoints: ["https://10.0.0.5:2379"],
      caFile: "/ca.crt",
      certFile: "/c.crt",
      keyFile: "/c.key",
    };
    expect(
      convertClusterConfigurationV1beta3({ etcd: { external }, clusterName: "x" }).cluster,
    ).toEqual({
      etcd: { external },
      clusterName: "x",
    });
  });

  it("gives InitConfiguration imagePullSerial true and the moved timeout", () => {
    expect(convertInitConfigurationV1beta3({ certificateKey: "k" }, "6m0s")).toEqual({
      certificateKey: "k",
      nodeRegistration: { imagePullSerial: true },
      timeouts: { controlPlaneComponentHealthCheck: "6m0s" },
    });
  });

  it("moves discovery.timeout to timeouts.discovery", () => {
    expect(
      convertJoinConfigurationV1beta3({
        discovery: { timeout: "1m0s", tlsBootstrapToken: "abcdef.0123456789abcdef" },
        nodeRegistration: { kubeletExtraArgs: { v: "2" } },
      }),
    ).toEqual({
      discovery: { tlsBootstrapToken: "abcdef.0123456789abcdef" },
      nodeRegistration: { kubeletExtraArgs: [{ name: "v", value: "2" }], imagePullSerial: true },
      timeouts: { discovery: "1m0s" },
    });
  });
});
