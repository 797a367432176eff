import type { APIEndpoint } from "../config/types.js";
import { formatIP, hostPortOf, joinHostPort, parseIP } from "../config/network.js";

// API server URLs as kubeadm builds them (kubeadm: util/endpoint.go GetLocalAPIEndpoint,
// GetControlPlaneEndpoint): https, IPv6 bracketed, controlPlaneEndpoint's port defaulting
// to the local bindPort.

function bindPortOf(endpoint: APIEndpoint): number {
  const port = endpoint.bindPort;
  if (port === undefined || !Number.isInteger(port) || port < 1 || port > 65535) {
    throw new Error(
      `localAPIEndpoint.bindPort ${String(port)} must be a valid number between 1 and 65535, inclusive`,
    );
  }
  return port;
}

/** "https://<advertiseAddress>:<bindPort>": where this node's own API server listens. */
export function localAPIEndpointURL(endpoint: APIEndpoint): string {
  const port = bindPortOf(endpoint);
  const address = endpoint.advertiseAddress ?? "";
  if (!parseIP(address)) {
    throw new Error(`localAPIEndpoint.advertiseAddress "${address}" is not a valid IP address`);
  }
  return `https://${joinHostPort(formatIP(address), port)}`;
}

/**
 * The cluster's API address: "https://" + controlPlaneEndpoint (its port defaulting to
 * bindPort), or the local endpoint when controlPlaneEndpoint is unset.
 */
export function controlPlaneEndpointURL(
  controlPlaneEndpoint: string | undefined,
  local: APIEndpoint,
): string {
  const localURL = localAPIEndpointURL(local);
  if (!controlPlaneEndpoint) return localURL;
  const { host, port } = hostPortOf(controlPlaneEndpoint, "controlPlaneEndpoint");
  return `https://${joinHostPort(host, port ?? bindPortOf(local))}`;
}
