// Files chosen in the page, read in the browser.

// A file's bytes in base64 (btoa takes a string of byte-valued characters, built in slices so a
// large file does not overflow the argument list).
export async function base64(file) {
  const bytes = new Uint8Array(await file.arrayBuffer());
  let binary = '';
  const step = 0x8000;
  for (let i = 0; i < bytes.length; i += step) binary += String.fromCharCode(...bytes.subarray(i, i + step));
  return btoa(binary);
}
