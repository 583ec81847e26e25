// Peak memory of the relay's runtime while it delivers files natively: 10 and 50 MB to Telegram,
// a 100 MB document to WhatsApp. `npm run bench:delivery`. Runs wrangler dev (workerd) against
// the fake Telegram and WhatsApp servers, resets workerd's peak-RSS counter
// (/proc/<pid>/clear_refs), delivers, and reads VmHWM.
import { execFileSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startTelegramFake } from "../test/fixtures/platforms/telegram-fake";
import { startWhatsAppFake } from "../test/fixtures/platforms/whatsapp-fake";
import { startRelay } from "../test/support/relay";
import { resetPeak, statusKiB, workerdPids } from "./workerd-process";

const CHAT = "777";
const WA_ID = "15550000777";
const CASES = [
  { to: `telegram:${CHAT}`, size: 10_000_000 },
  { to: `telegram:${CHAT}`, size: 50_000_000 },
  { to: `whatsapp:${WA_ID}`, size: 100_000_000 },
];

const mib = (kib: number) => (kib / 1024).toFixed(1);

const telegram = await startTelegramFake({ maxUploadBytes: 60_000_000 });
const whatsapp = await startWhatsAppFake();
const relay = await startRelay({
  vars: {
    TELEGRAM_BOT_TOKEN: telegram.token,
    TELEGRAM_API_ROOT: telegram.url,
    TELEGRAM_WEBHOOK_SECRET: "bench",
    WHATSAPP_ACCESS_TOKEN: whatsapp.token,
    WHATSAPP_PHONE_NUMBER_ID: whatsapp.phoneNumberId,
    WHATSAPP_API_BASE: whatsapp.url,
  },
});
const dir = await mkdtemp(join(tmpdir(), "airlock-delivery-bench-"));
const lines = [
  "| file | delivery | time (s) | bytes exact | workerd RSS before (MiB) | peak during (MiB) | growth (MiB) |",
  "| --- | --- | --- | --- | --- | --- | --- |",
];
let failed = false;
try {
  const session = await relay.mintSession({
    destinations: [`telegram:${CHAT}`, `whatsapp:${WA_ID}`],
  });
  const env = { ...process.env, AIRLOCK_URL: relay.url, AIRLOCK_TOKEN: session.token };
  const shim = fileURLToPath(new URL("../dist/airlock.mjs", import.meta.url));
  for (const { to, size } of CASES) {
    telegram.reset();
    whatsapp.reset();
    const bytes = randomBytes(size);
    const path = join(dir, `video-${size}.bin`);
    await writeFile(path, bytes);
    const sent = JSON.parse(
      execFileSync(process.execPath, [shim, "send", path, "--json"], { env, encoding: "utf8" }),
    ) as { fileId: string };

    // The runtime process that grows is the one running the Worker; report each.
    const pids = workerdPids(relay.processGroup);
    for (const pid of pids) await resetPeak(pid);
    const before = await Promise.all(pids.map((pid) => statusKiB(pid, "VmRSS")));
    const started = Date.now();
    const response = await fetch(`${relay.url}/v1/files/${sent.fileId}/deliveries`, {
      method: "POST",
      headers: { authorization: `Bearer ${session.token}`, "content-type": "application/json" },
      body: JSON.stringify({ to }),
    });
    const record = (await response.json()) as { mode: string; method: string };
    const seconds = (Date.now() - started) / 1000;
    const peaks = await Promise.all(pids.map((pid) => statusKiB(pid, "VmHWM")));
    const [received] = to.startsWith("whatsapp:")
      ? whatsapp.requests("media")
      : telegram.requests("sendDocument");
    const exact = received?.files[0]?.sha256 === createHash("sha256").update(bytes).digest("hex");
    failed ||= !exact || response.status !== 201;
    const growth = pids.map((_, i) => peaks[i]! - before[i]!);
    const worst = growth.indexOf(Math.max(...growth));
    lines.push(
      `| ${size / 1e6} MB to ${to.split(":")[0]} | ${record.mode} ${record.method} | ${seconds.toFixed(2)} | ${exact} | ` +
        `${mib(before[worst]!)} | ${mib(peaks[worst]!)} | ${mib(growth[worst]!)} |`,
    );
    await rm(path);
  }
  console.log(lines.join("\n"));
  if (failed) process.exitCode = 1;
} finally {
  await rm(dir, { recursive: true, force: true });
  await relay.stop();
  await telegram.stop();
  await whatsapp.stop();
}
