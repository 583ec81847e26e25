/**
 * An incremental SHA-256 (FIPS 180-4) for the upload page's script, as browser source text.
 * WebCrypto's `digest` only hashes one buffer held whole in memory, so the page hashes each
 * part with it and feeds the parts through this to get the whole file's SHA-256 without
 * holding the file. The relay reads the assembled file back and checks that digest before
 * the file counts, so a fault here costs a retry, never a wrong file.
 */
export const SHA256_SCRIPT = String.raw`
function Sha256() {
  this.h = new Int32Array([1779033703, -1150833019, 1013904242, -1521486534, 1359893119, -1694144372, 528734635, 1541459225]);
  this.block = new Uint8Array(64);
  this.filled = 0;
  this.length = 0;
  this.w = new Int32Array(64);
}
Sha256.K = new Int32Array([
  1116352408, 1899447441, -1245643825, -373957723, 961987163, 1508970993, -1841331548, -1424204075,
  -670586216, 310598401, 607225278, 1426881987, 1925078388, -2132889090, -1680079193, -1046744716,
  -459576895, -272742522, 264347078, 604807628, 770255983, 1249150122, 1555081692, 1996064986,
  -1740746414, -1473132947, -1341970488, -1084653625, -958395405, -710438585, 113926993, 338241895,
  666307205, 773529912, 1294757372, 1396182291, 1695183700, 1986661051, -2117940946, -1838011259,
  -1564481375, -1474664885, -1035236496, -949202525, -778901479, -694614492, -200395387, 275423344,
  430227734, 506948616, 659060556, 883997877, 958139571, 1322822218, 1537002063, 1747873779,
  1955562222, 2024104815, -2067236844, -1933114872, -1866530822, -1538233109, -1090935817, -965641998
]);
// Compresses every whole 64-byte block of d[o, end): state in locals, as fast JS hashes do.
Sha256.prototype.compress = function (d, o, end) {
  var w = this.w, h = this.h, K = Sha256.K, t, a, b, c, dd, e, f, g, k, x, y;
  for (; o + 64 <= end; o += 64) {
    for (t = 0; t < 16; t++) {
      x = o + t * 4;
      w[t] = (d[x] << 24) | (d[x + 1] << 16) | (d[x + 2] << 8) | d[x + 3];
    }
    for (t = 16; t < 64; t++) {
      x = w[t - 15]; y = w[t - 2];
      w[t] = ((((y >>> 17) | (y << 15)) ^ ((y >>> 19) | (y << 13)) ^ (y >>> 10)) + w[t - 7] +
        (((x >>> 7) | (x << 25)) ^ ((x >>> 18) | (x << 14)) ^ (x >>> 3)) + w[t - 16]) | 0;
    }
    a = h[0]; b = h[1]; c = h[2]; dd = h[3]; e = h[4]; f = h[5]; g = h[6]; k = h[7];
    for (t = 0; t < 64; t++) {
      x = (((((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7))) +
        ((e & f) ^ (~e & g))) | 0) + ((k + ((K[t] + w[t]) | 0)) | 0) | 0;
      y = ((((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10))) +
        ((a & b) ^ (a & c) ^ (b & c))) | 0;
      k = g; g = f; f = e; e = (dd + x) | 0; dd = c; c = b; b = a; a = (x + y) | 0;
    }
    h[0] = (h[0] + a) | 0; h[1] = (h[1] + b) | 0; h[2] = (h[2] + c) | 0; h[3] = (h[3] + dd) | 0;
    h[4] = (h[4] + e) | 0; h[5] = (h[5] + f) | 0; h[6] = (h[6] + g) | 0; h[7] = (h[7] + k) | 0;
  }
};
Sha256.prototype.update = function (data) {
  var i = 0, n = data.length, take;
  this.length += n;
  if (this.filled > 0) {
    take = Math.min(64 - this.filled, n);
    this.block.set(data.subarray(0, take), this.filled);
    this.filled += take;
    i = take;
    if (this.filled < 64) return;
    this.compress(this.block, 0, 64);
    this.filled = 0;
  }
  this.compress(data, i, n);
  i += Math.floor((n - i) / 64) * 64;
  if (i < n) { this.block.set(data.subarray(i), 0); this.filled = n - i; }
};
Sha256.prototype.hex = function () {
  var bits = this.length * 8, tail = new Uint8Array(this.filled < 56 ? 64 - this.filled : 128 - this.filled), i, out = "";
  tail[0] = 0x80;
  var view = new DataView(tail.buffer);
  view.setUint32(tail.length - 8, Math.floor(bits / 4294967296));
  view.setUint32(tail.length - 4, bits >>> 0);
  this.update(tail);
  for (i = 0; i < 8; i++) out += (this.h[i] >>> 0).toString(16).padStart(8, "0");
  return out;
};
`;
