import { readConfig } from "../../src/config";
import { createBlobStore } from "../../src/storage";
import { backends } from "../support/backends";
import { blobStoreContract } from "./blob-store.contract";
import { blobStoreMultipartContract } from "./blob-store-multipart.contract";

// One suite, every backend: the local R2 binding and a real S3 server behind a verifying proxy.
for (const backend of backends()) {
  blobStoreContract(backend.name, () => createBlobStore(readConfig(backend.env), backend.env));
  blobStoreMultipartContract(backend.name, () =>
    createBlobStore(readConfig(backend.env), backend.env),
  );
}
