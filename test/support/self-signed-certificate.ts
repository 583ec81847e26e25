import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";

/** A key and a certificate for 127.0.0.1 in `dir`, made with openssl (installed by the test set-up). */
export function selfSignedCertificate(dir: string): {
  key: string;
  cert: string;
  certFile: string;
} {
  const keyFile = join(dir, "relay.key");
  const certFile = join(dir, "relay.crt");
  execFileSync(
    "openssl",
    [
      ...["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"],
      ...["-keyout", keyFile, "-out", certFile, "-days", "1", "-subj", "/CN=127.0.0.1"],
      ...["-addext", "subjectAltName=IP:127.0.0.1"],
    ],
    { stdio: "ignore" },
  );
  return { key: readFileSync(keyFile, "utf8"), cert: readFileSync(certFile, "utf8"), certFile };
}
