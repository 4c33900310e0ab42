/* SPDX-License-Identifier: MIT */
/*
 * The style and script embedded in our SVGs (written for gpuprof, not taken
 * from flamegraph.pl). Frames are <g><title/><rect fg:x fg:w/><text/></g>
 * with fg:x / fg:w their start and width in counts, so zooming is exact
 * however deep the zoom. The script must never contain "]]>".
 */
#ifndef GPUPROF_SVG_JS_H
#define GPUPROF_SVG_JS_H

#define SVG_CSS                                                                                    \
	"text{font-family:Verdana,sans-serif;font-size:12px;fill:rgb(0,0,0)}"                      \
	"#title{text-anchor:middle;font-size:17px}#subtitle{text-anchor:middle;fill:#666}"         \
	"#search,#unzoom{cursor:pointer}#search{opacity:0.1}#search:hover,#search.show{opacity:1}" \
	"#frames>g:hover>rect{stroke:black;stroke-width:0.5;cursor:pointer}"                      \
	".hide{display:none}.parent{opacity:0.5}"

/* Globals are kept to a few, and exposed (fg_search, fg_zoom, fg_reset) so
 * tests and users can drive the graph from the console. */
#define SVG_FLAME_JS                                                                               \
	"\n'use strict';var FG={};\n"                                                              \
	"function init(evt){var d=document;FG.svg=d.documentElement;"                              \
	"FG.frames=d.getElementById('frames');FG.details=d.getElementById('details').firstChild;" \
	"FG.unzoom=d.getElementById('unzoom');FG.search=d.getElementById('search');"               \
	"FG.matched=d.getElementById('matched');"                                                  \
	"FG.total=+FG.svg.getAttribute('fg:total');FG.W=+FG.svg.getAttribute('width');"            \
	"FG.xpad=+FG.svg.getAttribute('fg:xpad');FG.icicle=FG.svg.getAttribute('fg:icicle')==='1';" \
	"FG.zoomed=null;FG.term=null;"                                                             \
	"FG.frames.addEventListener('click',function(e){var g=fg_g(e.target);if(g){fg_zoom(g);"   \
	"e.stopPropagation();}});"                                                                 \
	"FG.frames.addEventListener('mouseover',function(e){var g=fg_g(e.target);"                 \
	"if(g)FG.details.nodeValue=g.firstElementChild.textContent;});"                            \
	"FG.frames.addEventListener('mouseout',function(){FG.details.nodeValue=' ';});"            \
	"FG.unzoom.addEventListener('click',fg_reset);"                                            \
	"FG.search.addEventListener('click',function(){if(FG.term){fg_clear();}else{"             \
	"var t=prompt('Search (regular expression):','');if(t)fg_search(t);}});"                   \
	"window.addEventListener('keydown',function(e){if((e.ctrlKey||e.metaKey)&&"                \
	"(e.key==='f'||e.key==='F')){e.preventDefault();var t=prompt('Search (regular "            \
	"expression):',FG.term||'');if(t)fg_search(t);}else if(e.key==='Escape'){fg_clear();}});" \
	"try{var q=new URLSearchParams(window.location.search);if(q.get('s'))fg_search(q.get('s'));" \
	"}catch(x){}}\n"                                                                           \
	"function fg_g(n){while(n&&n!==FG.frames){if(n.tagName==='g')return n;n=n.parentNode;}"   \
	"return null;}\n"                                                                          \
	"function fg_name(g){var t=g.firstElementChild.textContent,i=t.lastIndexOf(' (');"         \
	"return i<0?t:t.substring(0,i);}\n"                                                        \
	"function fg_r(g){return g.children[1];}\n"                                                \
	"function fg_label(g,pw){var n=fg_name(g),c=Math.floor(pw/(12*0.59));"                     \
	"g.children[2].textContent=c<3?'':(n.length<=c?n:n.substring(0,c-2)+'..');}\n"            \
	"function fg_place(g,px,pw){var r=fg_r(g);r.setAttribute('x',px.toFixed(2));"             \
	"r.setAttribute('width',pw.toFixed(2));g.children[2].setAttribute('x',(px+3).toFixed(2));" \
	"fg_label(g,pw);}\n"                                                                       \
	"function fg_zoom(z){var zr=fg_r(z),zx=+zr.getAttribute('fg:x'),zw=+zr.getAttribute('fg:w')," \
	"zy=+zr.getAttribute('y'),sc=(FG.W-2*FG.xpad)/zw,gs=FG.frames.children;"                  \
	"for(var i=0;i<gs.length;i++){var g=gs[i],r=fg_r(g),x=+r.getAttribute('fg:x'),"            \
	"w=+r.getAttribute('fg:w'),y=+r.getAttribute('y');g.classList.remove('hide','parent');"    \
	"var up=FG.icicle?y<=zy:y>=zy;"                                                            \
	"if(x<=zx&&x+w>=zx+zw&&up){fg_place(g,FG.xpad,FG.W-2*FG.xpad);if(g!==z)"                   \
	"g.classList.add('parent');}"                                                              \
	"else if(x>=zx&&x+w<=zx+zw&&!up){fg_place(g,FG.xpad+(x-zx)*sc,w*sc);}"                   \
	"else g.classList.add('hide');}"                                                           \
	"FG.zoomed=z;FG.unzoom.classList.remove('hide');if(FG.term)fg_search(FG.term);}\n"         \
	"function fg_reset(){var gs=FG.frames.children,sc=(FG.W-2*FG.xpad)/FG.total;"              \
	"for(var i=0;i<gs.length;i++){var g=gs[i],r=fg_r(g);g.classList.remove('hide','parent');"  \
	"fg_place(g,FG.xpad+(+r.getAttribute('fg:x'))*sc,(+r.getAttribute('fg:w'))*sc);}"          \
	"FG.zoomed=null;FG.unzoom.classList.add('hide');if(FG.term)fg_search(FG.term);}\n"         \
	"function fg_clear(){var gs=FG.frames.children;for(var i=0;i<gs.length;i++){var r=fg_r(gs[i]);" \
	"var o=r.getAttribute('fg:fill');if(o){r.setAttribute('fill',o);r.removeAttribute('fg:fill');}}" \
	"FG.term=null;FG.search.classList.remove('show');FG.matched.textContent=' ';}\n"          \
	"function fg_search(term){var re;try{re=new RegExp(term);}catch(x){"                       \
	"re=new RegExp(term.replace(/[.*+?^${}()|[\\]\\\\]/g,'\\\\$&'));}"                         \
	"fg_clear();FG.term=term;var gs=FG.frames.children,m=[],lo=0,hi=FG.total;"                 \
	"if(FG.zoomed){var zr=fg_r(FG.zoomed);lo=+zr.getAttribute('fg:x');"                        \
	"hi=lo+(+zr.getAttribute('fg:w'));}"                                                       \
	"for(var i=0;i<gs.length;i++){var g=gs[i];if(g.classList.contains('hide'))continue;"       \
	"if(!re.test(fg_name(g)))continue;var r=fg_r(g);r.setAttribute('fg:fill',r.getAttribute('fill'));" \
	"r.setAttribute('fill','rgb(230,0,230)');var x=+r.getAttribute('fg:x'),w=+r.getAttribute('fg:w');" \
	"m.push([Math.max(x,lo),Math.min(x+w,hi)]);}"                                              \
	"m.sort(function(a,b){return a[0]-b[0];});var sum=0,end=-1;"                               \
	"for(var j=0;j<m.length;j++){var a=Math.max(m[j][0],end);if(m[j][1]>a){sum+=m[j][1]-a;"   \
	"end=m[j][1];}}"                                                                           \
	"var pct=hi>lo?100*sum/(hi-lo):0;FG.search.classList.add('show');"                        \
	"FG.matched.textContent='Matched: '+pct.toFixed(1)+'%';return pct;}\n"

/* Heat map: click a cell, then another; the range between them is shown
 * as the command that renders its flame graph. */
#define SVG_HEAT_JS                                                                                \
	"\n'use strict';var HM={a:null};\n"                                                        \
	"function init(evt){var d=document;HM.svg=d.documentElement;HM.sel=d.getElementById('sel');" \
	"HM.cmd=HM.svg.getAttribute('hm:cmd');"                                                    \
	"d.getElementById('cells').addEventListener('click',function(e){var c=e.target;"          \
	"if(c.tagName!=='rect')return;if(!HM.a){HM.a=c;c.setAttribute('stroke','black');"         \
	"HM.sel.textContent='start '+c.getAttribute('hm:s')+' ns: click an end cell';}else{"       \
	"var s=Math.min(+HM.a.getAttribute('hm:s'),+c.getAttribute('hm:s')),"                      \
	"e2=Math.max(+HM.a.getAttribute('hm:e'),+c.getAttribute('hm:e'));"                         \
	"HM.a.removeAttribute('stroke');HM.a=null;HM.range=[s,e2];"                                \
	"HM.sel.textContent=HM.cmd+' --start-ns '+s+' --end-ns '+e2;}});}\n"

#endif
