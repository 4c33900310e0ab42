// SPDX-License-Identifier: MIT
// The flame graph SVG in headless Chromium: it loads without script errors,
// a click zooms (the clicked frame then spans the full width), Ctrl-F search
// highlights the expected frames and shows the match percentage, reset
// restores the layout. Screenshots go to the artifacts directory. The heat
// map has its own test (heatmap.test.js).
//   node flame.test.js FLAME.svg DIFF.svg ARTIFACTS_DIR
'use strict';
const fs = require('fs');
const path = require('path');
const { check, run, open, finish } = require('./lib');

const [flameSvg, diffSvg, artifacts] = process.argv.slice(2);

// Geometry of the frame whose name is `name` (first one found).
async function frame(page, name) {
	return page.evaluate((n) => {
		for (const g of document.getElementById('frames').children) {
			const t = g.firstElementChild.textContent;
			if (t.startsWith(n + ' (')) {
				const r = g.children[1];
				return { x: +r.getAttribute('x'), w: +r.getAttribute('width'),
					 fill: r.getAttribute('fill'), hidden: g.classList.contains('hide'),
					 label: g.children[2].textContent };
			}
		}
		return null;
	}, name);
}

(async () => {
	fs.mkdirSync(artifacts, { recursive: true });
	const b = await open();
	const page = b.page, errors = page.errors;

	await run('loads without script errors', async () => {
		await page.goto('file://' + path.resolve(flameSvg));
		await page.waitForFunction(() => window.FG && FG.frames);
		check(errors.length === 0, 'script errors: ' + errors.join('; '));
		const n = await page.evaluate(() => document.getElementById('frames').children.length);
		check(n > 5, 'frames drawn: ' + n);
		await page.screenshot({ path: path.join(artifacts, 'flame.png') });
	});

	await run('click zooms to full width', async () => {
		const before = await frame(page, 'run_epoch');
		check(before && before.w < 1000, 'run_epoch before: ' + JSON.stringify(before));
		const box = await page.evaluate(() => {
			for (const g of document.getElementById('frames').children)
				if (g.firstElementChild.textContent.startsWith('run_epoch ('))
					return g.children[1].getBoundingClientRect().toJSON();
		});
		await page.mouse.click(box.x + box.width / 2, box.y + box.height / 2);
		const after = await frame(page, 'run_epoch');
		check(Math.abs(after.x - 10) < 0.01 && Math.abs(after.w - 1180) < 0.01,
		      'clicked frame spans the width: ' + JSON.stringify(after));
		const sib = await frame(page, 'load_data');
		check(sib.hidden, 'a sibling outside the zoom is hidden');
		const child = await frame(page, 'matmul_tile');
		check(!child.hidden && child.w > before.w, 'children are widened');
		check(!(await page.evaluate(() => FG.unzoom.classList.contains('hide'))), 'reset shown');
		await page.screenshot({ path: path.join(artifacts, 'flame-zoomed.png') });
		await page.click('#unzoom');
		const reset = await frame(page, 'run_epoch');
		check(Math.abs(reset.w - before.w) < 0.01, 'reset restores the width');
	});

	await run('Ctrl-F search highlights and shows the match percentage', async () => {
		page.once('dialog', (d) => d.accept('matmul'));
		await page.keyboard.press('Control+f');
		await page.waitForFunction(() => FG.term === 'matmul');
		const m = await frame(page, 'matmul_tile');
		check(m.fill === 'rgb(230,0,230)', 'matching frame highlighted: ' + m.fill);
		const other = await frame(page, 'load_data');
		check(other.fill !== 'rgb(230,0,230)', 'non-matching frame not highlighted');
		const txt = await page.textContent('#matched');
		// 60 of 100 samples are under matmul_tile (see run.sh's input)
		check(txt === 'Matched: 60.0%', 'match text: ' + txt);
		await page.screenshot({ path: path.join(artifacts, 'flame-search.png') });
		await page.keyboard.press('Escape');
		check((await frame(page, 'matmul_tile')).fill !== 'rgb(230,0,230)', 'Escape clears');
	});

	await run('diff loads', async () => {
		await page.goto('file://' + path.resolve(diffSvg));
		await page.waitForFunction(() => window.FG && FG.frames);
		await page.screenshot({ path: path.join(artifacts, 'diff.png') });
		check(errors.length === 0, 'script errors: ' + errors.join('; '));
	});

	await b.close();
	finish();
})().catch((e) => { console.log('FAIL setup: ' + (e && e.stack || e)); process.exit(1); });
