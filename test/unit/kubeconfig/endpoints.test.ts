import { describe, expect, it } from "vitest";
import { controlPlaneEndpointURL, localAPIEndpointURL } from "../../../src/kubeconfig/endpoints.js";

describe("API endpoints (kubeadm util/endpoint.go)", () => {
  it.each<[string | undefined, string, number, string, string]>([
    [undefined, "192.168.1.5", 6443, "https://192.168.1.5:6443", "https://192.168.1.5:6443"],
    ["", "192.168.1.5", 6443, "https://192.168.1.5:6443", "https://192.168.1.5:6443"],
    [
      "api.example.com",
      "192.168.1.5",
      6443,
      "https://api.example.com:6443",
      "https://192.168.1.5:6443",
    ],
    [
      "api.example.com:443",
      "192.168.1.5",
      6443,
      "https://api.example.com:443",
      "https://192.168.1.5:6443",
    ],
    ["10.0.0.100", "192.168.1.5", 7443, "https://10.0.0.100:7443", "https://192.168.1.5:7443"],
    ["[fd00::100]:8443", "fd00::5", 6443, "https://[fd00::100]:8443", "https://[fd00::5]:6443"],
    ["fd00::100", "fd00:0::5", 6443, "https://[fd00::100]:6443", "https://[fd00::5]:6443"],
  ])("controlPlaneEndpoint %j, advertise %s:%d", (cpe, address, port, cp, local) => {
    const endpoint = { advertiseAddress: address, bindPort: port };
    expect(controlPlaneEndpointURL(cpe, endpoint)).toBe(cp);
    expect(localAPIEndpointURL(endpoint)).toBe(local);
  });

  it.each<[string | undefined, string, number, RegExp]>([
    [
      undefined,
      "not-an-ip",
      6443,
      /localAPIEndpoint.advertiseAddress "not-an-ip" is not a valid IP address/,
    ],
    [
      undefined,
      "10.0.0.1",
      0,
      /localAPIEndpoint.bindPort 0 must be a valid number between 1 and 65535/,
    ],
    [
      "api_bad:6443",
      "10.0.0.1",
      6443,
      /controlPlaneEndpoint "api_bad:6443" is not a valid address: host "api_bad" must be/,
    ],
  ])("refuses %j %s %d", (cpe, address, port, message) => {
    expect(() =>
      controlPlaneEndpointURL(cpe, { advertiseAddress: address, bindPort: port }),
    ).toThrow(message);
  });
});
