import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';

/**
 * Where ffmpeg and ffprobe live: system binaries on PATH win (distribution builds are usually
 * newer and may carry hardware codecs), else the static builds shipped by the npm installers.
 */
export function resolveFfmpegPaths(pathEnv: string | undefined = process.env.PATH): { ffmpeg: string; ffprobe: string } {
  return {
    ffmpeg: findOnPath('ffmpeg', pathEnv) ?? installedBinary('ffmpeg'),
    ffprobe: findOnPath('ffprobe', pathEnv) ?? installedBinary('ffprobe'),
  };
}

function findOnPath(name: string, pathEnv: string | undefined): string | undefined {
  for (const dir of (pathEnv ?? '').split(delimiter)) {
    // An empty PATH entry means the current directory; never pick a binary from there.
    if (dir === '') continue;
    const candidate = join(dir, name);
    if (isExecutableFile(candidate)) return candidate;
  }
  return undefined;
}

function isExecutableFile(path: string): boolean {
  try {
    if (!statSync(path).isFile()) return false;
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function installedBinary(name: 'ffmpeg' | 'ffprobe'): string {
  const path = loadInstallerPath(name);
  if (!isExecutableFile(path)) {
    // The installers set the execute bit in a postinstall script, which `npm install --ignore-scripts`
    // (or an allowScripts policy) skips.
    throw new Error(
      `${name} was not found on PATH and the npm-shipped binary at ${path} is not executable; ` +
        `run \`chmod +x ${path}\` (or install ${name} on the system PATH)`,
    );
  }
  return path;
}

function loadInstallerPath(name: 'ffmpeg' | 'ffprobe'): string {
  const pkg = name === 'ffmpeg' ? '@ffmpeg-installer/ffmpeg' : '@ffprobe-installer/ffprobe';
  try {
    // Loaded lazily: the installer throws on platforms it has no build for, and it is not needed
    // at all when the system has the binary.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return (require(pkg) as { path: string }).path;
  } catch (err) {
    throw new Error(`${name} was not found on PATH and ${pkg} has no usable build here: ${(err as Error).message}`, { cause: err });
  }
}
