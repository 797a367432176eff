import type { InitConfig } from "../../../src/config/types.js";
import { baseInitConfig } from "../../support/init-fixtures.js";

// The pki and kubeconfig tests' configuration: the shared defaulted one for node "cp-1" at
// 192.168.10.5, with the fields these tests vary set after defaulting (as written, so a test
// can also give values defaulting would change, like an upper-case SAN).

export interface InitOverrides {
  advertiseAddress?: string;
  bindPort?: number;
  nodeName?: string;
  serviceSubnet?: string;
  dnsDomain?: string;
  controlPlaneEndpoint?: string;
  certSANs?: string[];
  certificatesDir?: string;
  encryptionAlgorithm?: InitConfig["cluster"]["encryptionAlgorithm"];
  externalEtcd?: boolean;
  etcdServerCertSANs?: string[];
  etcdPeerCertSANs?: string[];
  certificateValidityPeriod?: string;
  caCertificateValidityPeriod?: string;
  clusterName?: string;
}

export function testInitConfig(o: InitOverrides = {}): InitConfig {
  return baseInitConfig({ nodeName: "cp-1", advertiseAddress: "192.168.10.5" }, (c) => {
    const endpoint = c.init.localAPIEndpoint;
    if (o.advertiseAddress !== undefined) endpoint.advertiseAddress = o.advertiseAddress;
    if (o.bindPort !== undefined) endpoint.bindPort = o.bindPort;
    if (o.nodeName !== undefined) c.init.nodeRegistration.name = o.nodeName;
    const cl = c.cluster;
    if (o.serviceSubnet !== undefined) cl.networking.serviceSubnet = o.serviceSubnet;
    if (o.dnsDomain !== undefined) cl.networking.dnsDomain = o.dnsDomain;
    if (o.controlPlaneEndpoint !== undefined) cl.controlPlaneEndpoint = o.controlPlaneEndpoint;
    if (o.certSANs !== undefined) cl.apiServer.certSANs = o.certSANs;
    if (o.certificatesDir !== undefined) cl.certificatesDir = o.certificatesDir;
    if (o.encryptionAlgorithm !== undefined) cl.encryptionAlgorithm = o.encryptionAlgorithm;
    if (o.externalEtcd) cl.etcd = { external: { endpoints: ["https://10.0.0.9:2379"] } };
    if (o.etcdServerCertSANs !== undefined) cl.etcd.local!.serverCertSANs = o.etcdServerCertSANs;
    if (o.etcdPeerCertSANs !== undefined) cl.etcd.local!.peerCertSANs = o.etcdPeerCertSANs;
    if (o.certificateValidityPeriod !== undefined)
      cl.certificateValidityPeriod = o.certificateValidityPeriod;
    if (o.caCertificateValidityPeriod !== undefined)
      cl.caCertificateValidityPeriod = o.caCertificateValidityPeriod;
    if (o.clusterName !== undefined) cl.clusterName = o.clusterName;
  });
}
