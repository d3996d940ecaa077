// The headless Chromium of the npm package @sparticuz/chromium, launched through playwright-core,
// unpacked for this process alone. The package unpacks its browser into os.tmpdir() (a fixed path,
// /tmp/chromium), so two test runs on one machine at once would write and start the same file
// (`spawn ETXTBSY`). Here it unpacks into a folder of its own (os.tmpdir() reads TMPDIR on each
// call, and the package takes its paths synchronously when executablePath() is called), removed
// when the browser closes. Never a skip: a browser that does not unpack or start fails, saying why.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import headlessChromium from '@sparticuz/chromium';
import { chromium, type Browser } from 'playwright-core';

/**
 * The package's own flags (headless shell, no sandbox: it may run as root), less two that would hide
 * what browser tests look for (--disable-web-security, --allow-running-insecure-content: CORS and
 * mixed content must be enforced) and one made for AWS Lambda (--single-process: there, closing a
 * page takes the whole browser down), plus no traffic of the browser's own.
 */
const DROPPED_FLAGS = ['--disable-web-security', '--allow-running-insecure-content', '--single-process'];
const CHROMIUM_FLAGS = [
  ...headlessChromium.args.filter((flag) => !DROPPED_FLAGS.includes(flag)),
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

export interface HeadlessChromium {
  browser: Browser;
  /** Where this process unpacked it. */
  executablePath: string;
  /** Closes the browser and removes its unpacked files. */
  close(): Promise<void>;
}

/** Unpacks the browser into `folder` (the package's own unpacking, pointed there). */
function unpackInto(folder: string): Promise<string> {
  const tmpdirBefore = process.env.TMPDIR;
  process.env.TMPDIR = folder;
  try {
    return headlessChromium.executablePath();
  } finally {
    if (tmpdirBefore === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = tmpdirBefore;
  }
}

export async function launchHeadlessChromium(): Promise<HeadlessChromium> {
  const folder = await mkdtemp(join(tmpdir(), 'animal-store-chromium-'));
  try {
    const executablePath = await unpackInto(folder).catch((error: Error) => {
      throw new Error(`The headless Chromium of @sparticuz/chromium did not unpack (${error.message}): run \`npm ci\`.`);
    });
    if (!executablePath.startsWith(`${folder}/`)) throw new Error(`@sparticuz/chromium unpacked to ${executablePath}, not ${folder}`);
    const browser = await chromium.launch({ executablePath, args: CHROMIUM_FLAGS });
    return {
      browser,
      executablePath,
      close: async () => {
        await browser.close();
        await rm(folder, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await rm(folder, { recursive: true, force: true });
    throw error;
  }
}
