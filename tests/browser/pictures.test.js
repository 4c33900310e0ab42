// SPDX-License-Identifier: MIT
// Pictures a person reads, checked as Chromium lays them out: the comm
// SVG's legend labels do not run into each other or the next swatch; the
// heat map of one thread sampled at 49 Hz shows more than one shade and
// labels several columns, without overlapping labels; a normalized diff
// draws an unchanged root neutral, not "-0.00" blue. Screenshots go to the
// artifacts directory.
//   node pictures.test.js COMM.svg HEAT_49HZ.svg DIFF_NORMALIZED.svg ARTIFACTS_DIR
'use strict';
const fs = require('fs');
const path = require('path');
const { check, run, open, finish } = require('./lib');

const [commSvg, heatSvg, diffSvg, artifacts] = process.argv.slice(2);

function intersect(a, b) {
	return a.x < b.x + b.width && b.x < a.x + a.width &&
	       a.y < b.y + b.height && b.y < a.y + a.height;
}

// The first pair of boxes that intersect, or null.
function overlap(boxes) {
	for (let i = 0; i < boxes.length; i++)
		for (let j = i + 1; j < boxes.length; j++)
			if (intersect(boxes[i], boxes[j]))
				return [boxes[i], boxes[j]];
	return null;
}

(async () => {
	fs.mkdirSync(artifacts, { recursive: true });
	const b = await open();
	const page = b.page, errors = page.errors;

	await run('comm legend: labels and swatches do not overlap', async () => {
		await page.goto('file://' + path.resolve(commSvg));
		// a legend item: a 10x10 swatch and the label after it
		const items = await page.evaluate(() => {
			const out = [];
			for (const r of document.querySelectorAll('rect[width="10"][height="10"]')) {
				const t = r.nextElementSibling;
				if (!t || t.tagName !== 'text')
					continue;
				const box = (e) => { const q = e.getBoundingClientRect();
					return { x: q.x, y: q.y, width: q.width, height: q.height, name: t.textContent }; };
				out.push(box(r), box(t));
			}
			return out;
		});
		await page.screenshot({ path: path.join(artifacts, 'comm.png') });
		check(items.length === 16, 'eight legend items: ' + items.length / 2);
		const o = overlap(items);
		check(!o, 'overlap: ' + JSON.stringify(o));
		check(errors.length === 0, 'errors: ' + errors.join('; '));
	});

	await run('49 Hz heat map: several shades, several column labels', async () => {
		await page.goto('file://' + path.resolve(heatSvg));
		await page.waitForFunction(() => window.HM && HM.pos);
		const r = await page.evaluate(() => {
			const fills = new Set();
			for (const c of document.getElementById('cells').children)
				if (+c.getAttribute('hm:n') > 0)
					fills.add(getComputedStyle(c).fill);
			// column labels: the texts above the grid ending in "s"
			const top = document.getElementById('cells').getBoundingClientRect().y;
			const labels = [];
			for (const t of document.querySelectorAll('#heat text')) {
				const q = t.getBoundingClientRect();
				if (/^\d+s$/.test(t.textContent) && q.y + q.height <= top + 1)
					labels.push({ x: q.x, y: q.y, width: q.width, height: q.height,
						      text: t.textContent });
			}
			return { fills: [...fills], labels };
		});
		await page.screenshot({ path: path.join(artifacts, 'heatmap-49hz.png') });
		check(r.fills.length >= 2, 'busy cells in one shade: ' + r.fills.join(' '));
		check(r.labels.length >= 3, 'column labels: ' + r.labels.map((l) => l.text).join(' '));
		const o = overlap(r.labels);
		check(!o, 'labels overlap: ' + JSON.stringify(o));
		check(errors.length === 0, 'errors: ' + errors.join('; '));
	});

	await run('normalized diff: an unchanged root is neutral', async () => {
		await page.goto('file://' + path.resolve(diffSvg));
		await page.waitForFunction(() => window.FG && FG.frames);
		const root = await page.evaluate(() => {
			for (const g of document.getElementById('frames').children) {
				const t = g.firstElementChild.textContent;
				if (t.startsWith('all ('))
					return { title: t, fill: getComputedStyle(g.children[1]).fill };
			}
			return null;
		});
		await page.screenshot({ path: path.join(artifacts, 'diff-normalized.png') });
		check(root, 'root drawn');
		check(root.fill === 'rgb(250, 250, 250)', 'root fill: ' + root.fill);
		check(!/-0\.00/.test(root.title), 'root title: ' + root.title);
		check(errors.length === 0, 'errors: ' + errors.join('; '));
	});

	await b.close();
	finish();
})().catch((e) => { console.log('FAIL setup: ' + (e && e.stack || e)); process.exit(1); });
