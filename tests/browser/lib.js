// SPDX-License-Identifier: MIT
// What the browser tests share: a headless Chromium (playwright-core) on a
// fresh profile, named checks that count passes and failures, and a page
// that records script errors.
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { chromium } = require('playwright-core');

let passed = 0, failed = 0;

function check(cond, msg) {
	if (cond) return;
	throw new Error(msg);
}

async function run(name, fn) {
	try {
		await fn();
		passed++;
		console.log('ok   ' + name);
	} catch (e) {
		failed++;
		console.log('FAIL ' + name + ': ' + (e && e.stack || e));
	}
}

// A browser on a fresh profile directory and a page whose script errors
// land in page.errors. close() removes the profile.
async function open(viewport) {
	const userDir = fs.mkdtempSync(path.join(os.tmpdir(), 'gpd-chromium-'));
	// playwright passes userDir as --user-data-dir
	const browser = await chromium.launchPersistentContext(userDir, {
		executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
		headless: true,
		viewport: viewport || { width: 1220, height: 700 },
		args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic',
		       '--no-first-run', '--disable-background-networking',
		       '--disable-component-update', '--disable-sync'],
	});
	const page = await browser.newPage();
	page.errors = [];
	page.on('pageerror', (e) => page.errors.push(String(e)));
	page.on('console', (m) => { if (m.type() === 'error') page.errors.push(m.text()); });
	return {
		page,
		close: async () => {
			await browser.close();
			fs.rmSync(userDir, { recursive: true, force: true });
		},
	};
}

function finish() {
	console.log(`${passed} passed, ${failed} failed`);
	process.exit(failed ? 1 : 0);
}

module.exports = { check, run, open, finish };
