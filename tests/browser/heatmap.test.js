// SPDX-License-Identifier: MIT
// The interactive heat map SVG in headless Chromium: it loads without script
// errors; clicking a start cell and shift-clicking an end cell draws the
// flame graph of that range in the page, whose root count is the sum of the
// selected cells' counts (and, from the synthetic input, a known number);
// the shared flame graph script zooms it; "Back to heat map" returns; GPU
// launches and EU-stall rows draw with the GPU palette; a page whose data was bounded says so and
// still adds up. Screenshots go to the artifacts directory.
//   node heatmap.test.js HEAT.svg HEAT_GPU.svg HEAT_EU.svg HEAT_BOUNDED.svg ARTIFACTS_DIR
'use strict';
const fs = require('fs');
const path = require('path');
const { check, run, open, finish } = require('./lib');

const [heatSvg, gpuSvg, euSvg, boundedSvg, artifacts] = process.argv.slice(2);

// The drawn frame named `name`: its count (from the title), geometry, fill.
async function frame(page, name) {
	return page.evaluate((n) => {
		for (const g of document.getElementById('frames').children) {
			const t = g.firstElementChild.textContent;
			if (t.startsWith(n + ' (')) {
				const r = g.children[1];
				return { count: +t.substring(n.length + 2).split(' ')[0],
					 x: +r.getAttribute('x'), w: +r.getAttribute('width'),
					 fill: r.getAttribute('fill'), hidden: g.classList.contains('hide') };
			}
		}
		return null;
	}, name);
}

// Sum of hm:n over cells lo..hi (document order = time order).
async function cellSum(page, lo, hi) {
	return page.evaluate(([a, b]) => {
		const c = document.getElementById('cells').children;
		let s = 0;
		for (let i = a; i <= b; i++) s += +c[i].getAttribute('hm:n');
		return s;
	}, [lo, hi]);
}

async function shown(page, id) {
	return page.evaluate((i) => !document.getElementById(i).classList.contains('hide'), id);
}

async function load(page, file) {
	await page.goto('file://' + path.resolve(file));
	await page.waitForFunction(() => window.HM && HM.pos);
}

// Click cell a, then shift-click cell b.
async function select(page, a, b) {
	const cells = await page.$$('#cells rect');
	await cells[a].click();
	await cells[b].click({ modifiers: ['Shift'] });
	await page.waitForFunction(() => !document.getElementById('flame').classList.contains('hide'));
}

(async () => {
	fs.mkdirSync(artifacts, { recursive: true });
	const b = await open();
	const page = b.page, errors = page.errors;

	await run('heat map loads without script errors', async () => {
		await load(page, heatSvg);
		check(errors.length === 0, 'script errors: ' + errors.join('; '));
		const n = await page.evaluate(() => document.getElementById('cells').children.length);
		check(n === 150, '3 s x 50 rows of cells: ' + n);
		check(await shown(page, 'heat') && !(await shown(page, 'flame')), 'heat map shown first');
		await page.screenshot({ path: path.join(artifacts, 'heatmap.png') });
	});

	await run('two cells select a range whose flame graph is drawn in place', async () => {
		// the first second: rows 0..49 of column 0; the synthetic capture
		// samples every 25 ms, so 40 samples
		await select(page, 0, 49);
		const want = await cellSum(page, 0, 49);
		check(want === 40, 'cells of the first second: ' + want);
		const root = await frame(page, 'all');
		check(root && root.count === want, 'root count = selected cells: ' + JSON.stringify(root));
		check(Math.abs(root.w - 1180) < 0.01, 'root spans the width: ' + root.w);
		const compute = await frame(page, 'compute');
		check(compute && compute.count === 40, 'compute: ' + JSON.stringify(compute));
		const title = await page.textContent('#title');
		check(title.includes('0.000 s to 1.000 s') && title.includes('40 samples'),
		      'range in the title: ' + title);
		const sel = await page.textContent('#sel');
		check(sel === 'gpuprofctl flamegraph 7 --out range.svg --start-ns 1000000000000 ' +
		      '--end-ns 1000999999999', 'reproducing command: ' + sel);
		check(await page.isVisible('#sel') && await page.isVisible('#back'), 'command, back shown');
		await page.screenshot({ path: path.join(artifacts, 'heatmap-flame.png') });
		check(errors.length === 0, 'script errors: ' + errors.join('; '));
	});

	await run('the shared flame graph script zooms the range', async () => {
		const box = await page.evaluate(() => {
			for (const g of document.getElementById('frames').children)
				if (g.firstElementChild.textContent.startsWith('main ('))
					return g.children[1].getBoundingClientRect().toJSON();
		});
		await page.mouse.click(box.x + box.width / 2, box.y + box.height / 2);
		const m = await frame(page, 'main');
		check(Math.abs(m.x - 10) < 0.01 && Math.abs(m.w - 1180) < 0.01, 'zoomed: ' + JSON.stringify(m));
		await page.click('#unzoom');
	});

	await run('back to the heat map, then a range chosen end first', async () => {
		await page.click('#back');
		check(await shown(page, 'heat') && !(await shown(page, 'flame')), 'heat map shown again');
		const title = await page.textContent('#title');
		check(title === 'Sub-second heat map', 'title restored: ' + title);
		const w = await page.evaluate(() => document.documentElement.getAttribute('width'));
		check(w === '720', 'size restored: ' + w);
		// cells 120..60: from 1.2 s to 2.42 s, across a column boundary
		await select(page, 120, 60);
		const want = await cellSum(page, 60, 120);
		const root = await frame(page, 'all');
		check(want > 0 && root.count === want, 'root ' + (root && root.count) + ' = cells ' + want);
		const hostile = await frame(page, 'f"q\'<x>&y');
		const bad = await frame(page, 'bad<&>\ufffd');
		check(hostile && bad && hostile.count === bad.count, 'XML-hostile names intact');
		const sel = await page.textContent('#sel');
		check(/--start-ns 1001200000000 --end-ns 1002419999999$/.test(sel), 'command: ' + sel);
		await page.screenshot({ path: path.join(artifacts, 'heatmap-flame2.png') });
		await page.click('#back');
	});

	await run('GPU frames get the GPU palette', async () => {
		await load(page, gpuSvg);
		const n = await page.evaluate(() => document.getElementById('cells').children.length);
		await select(page, 0, n - 1);
		const root = await frame(page, 'all');
		check(root.count === await cellSum(page, 0, n - 1), 'root = all cells');
		const k = await frame(page, 'gemm<float>_[G]');
		const m = /rgb\((\d+),(\d+),(\d+)\)/.exec(k && k.fill);
		check(m && +m[1] < 100 && +m[3] >= 200, 'GPU kernel is blue: ' + (k && k.fill));
		await page.screenshot({ path: path.join(artifacts, 'heatmap-gpu.png') });
	});

	await run('EU-stall rows: GPU frames, their count, the range in ns', async () => {
		await load(page, euSvg);
		const n = await page.evaluate(() => document.getElementById('cells').children.length);
		await select(page, 0, n - 1);
		const root = await frame(page, 'all');
		check(root.count === 21 && root.count === await cellSum(page, 0, n - 1),
		      'root = the 21 stall samples: ' + root.count);
		const send = await frame(page, 'send_[g]');
		const m = /rgb\((\d+),(\d+),(\d+)\)/.exec(send && send.fill);
		check(send && send.count === 8 && m && +m[1] >= 140 && +m[3] >= 230,
		      'send_[g]: 8, light blue: ' + JSON.stringify(send));
		const sel = await page.textContent('#sel');
		check(/^1000000000000 to 1000999999999 ns$/.test(sel), 'range: ' + sel);
		await page.screenshot({ path: path.join(artifacts, 'heatmap-eu-stall.png') });
		check(errors.length === 0, 'script errors: ' + errors.join('; '));
	});

	await run('a bounded page says so and still adds up', async () => {
		await load(page, boundedSvg);
		const note = await page.textContent('#note');
		check(/coarsened/.test(note) && /merged into their callers/.test(note), 'note: ' + note);
		const n = await page.evaluate(() => document.getElementById('cells').children.length);
		await select(page, 0, n - 1);
		const root = await frame(page, 'all');
		check(root.count === 100 && root.count === await cellSum(page, 0, n - 1),
		      'root = every cell: ' + root.count);
		// the syscall path (30 of 100) was merged into run: run keeps its 90
		const run_ = await frame(page, 'run'), leaf = await frame(page, 'compute');
		check(run_ && run_.count === 90 && leaf && leaf.count === 60, 'widths kept');
		check(!(await frame(page, 'write_log')), 'narrow frames merged');
		check(errors.length === 0, 'script errors: ' + errors.join('; '));
	});

	await b.close();
	finish();
})().catch((e) => { console.log('FAIL setup: ' + (e && e.stack || e)); process.exit(1); });
