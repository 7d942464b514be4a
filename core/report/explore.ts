/**
 * The explorable part of the HTML report: every task as compact data in one JSON block, and
 * the page's one script that renders it on demand (filters by paper, snippet, model, failure
 * class and status; the models side by side on one snippet; the snippet x model matrix;
 * sortable tables; chart marks that open their tasks).
 *
 * The page must stay one file under 3 MB for a 32-model x 212-task sweep, so the task text
 * (answers, diffs, logs, prompts) shares a fixed budget: a small run keeps everything, a
 * large one keeps the head of each answer and the tail of each log, and every cut names the
 * `rcb show` command that prints the whole. The data is rendered with textContent only: no
 * text of a run is ever parsed as markup.
 */
import type { Judge } from '../types';
import type { TaskDetail } from './task-detail';
import { describeVerdict, detailStatus } from './task-detail';

/** Bytes of task text (answers, diffs, logs) the page keeps, shared by its tasks. */
export const TASK_TEXT_BUDGET = 900_000;
/** Bytes of prompt text (each snippet's prompt after the shared prefix), shared by the snippets. */
export const PROMPT_TEXT_BUDGET = 250_000;
/** Bytes of the papers' shared prompt prefixes (instructions and paper text), shared by the papers. */
export const PREFIX_TEXT_BUDGET = 200_000;
/** Test logs are kept head and tail in the store; a page with room keeps the last part of each. */
export const LOG_TAIL_CHARS = 6000;
/** Per-task text budget from which the page keeps whole answers, diffs and raw answers. */
export const FULL_TASK_CHARS = 14_000;

/** One snippet of one run: the rows of the side-by-side matrix. */
export interface ExploreSnippet {
  /** Run index. */
  r: number;
  paper: string;
  file: string;
  snippet: string;
  loc: number;
  /** The prompt after the paper's shared prefix, perhaps cut; its full length. */
  prompt?: string;
  promptChars?: number;
  prefixChars?: number;
}

/**
 * One task sample as a positional row (a 32 x 212 sweep has 6,784 of them: field names would
 * weigh more than the text): snippet, model, sample, status, class, verdict, seconds, answer
 * line, answer, answer length, raw answer, diff, stdout, stdout bytes, stderr, stderr bytes,
 * logs cut in the store, notes. Strings that repeat (classes, verdicts, finish reasons,
 * notes) are indices into `strings`; trailing empty fields are dropped. The page's script
 * reads it back with its field names (EXPLORE_SCRIPT, `row`).
 */
export type ExploreRow = (number | string | number[] | 0)[];

/** A task row read back with names (what the page's script makes of a row). */
export interface ExploreTask {
  s: number;
  m: number;
  k: number;
  st: 'pass' | 'fail' | 'untested' | 'env_broken';
  c: string;
  v: string;
  answer: string | null;
  answerChars: number;
  stdout: string | null;
  stderr: string | null;
}

export const STATUSES = ['pass', 'fail', 'untested', 'env_broken'] as const;

export interface ExploreData {
  runs: string[];
  /** Entry names (the page's models) and the model id each stands for. */
  models: string[];
  modelIds: string[];
  judge: Judge;
  snippets: ExploreSnippet[];
  tasks: ExploreRow[];
  strings: string[];
  /** True when long text was cut to keep the page small. */
  cut: boolean;
}

const headCut = (s: string, n: number) => (s.length > n ? s.slice(0, Math.max(0, n)) : s);
const tailCut = (s: string, n: number) => (s.length > n ? s.slice(s.length - Math.max(0, n)) : s);

export interface ExploreRun {
  label: string;
  details: TaskDetail[];
  /** Entry index of each model id of the run. */
  modelIndex: (model: string) => number;
}

/** The data block of the page, with every task's text cut to its share of the budget. */
export function exploreData(runs: ExploreRun[], models: string[], judge: Judge, modelIds: string[] = models): ExploreData {
  const total = runs.reduce((a, r) => a + r.details.length, 0) || 1;
  const perTask = TASK_TEXT_BUDGET / total;
  const full = perTask >= FULL_TASK_CHARS;
  const answerCap = full ? 20_000 : Math.floor(perTask * 0.6);
  const stderrCap = full ? LOG_TAIL_CHARS : Math.floor(perTask * 0.3);
  const stdoutCap = full ? LOG_TAIL_CHARS : Math.floor(perTask * 0.1);
  const snippets: ExploreSnippet[] = [];
  const snippetIndex = new Map<string, number>();
  const strings: string[] = [];
  const stringIndex = new Map<string, number>();
  const str = (x: string) => {
    let i = stringIndex.get(x);
    if (i === undefined) {
      i = strings.length;
      stringIndex.set(x, i);
      strings.push(x);
    }
    return i;
  };
  const tasks: ExploreRow[] = [];
  let cut = false;
  const distinctSnippets = new Set(runs.flatMap((r, ri) => r.details.map((d) => `${ri}\0${d.task.paper}\0${d.task.file}\0${d.task.snippet}`))).size || 1;
  const promptCap = Math.min(40_000, Math.floor(PROMPT_TEXT_BUDGET / distinctSnippets));
  runs.forEach((run, ri) => {
    for (const d of run.details) {
      const t = d.task;
      const key = `${ri}\0${t.paper}\0${t.file}\0${t.snippet}`;
      let s = snippetIndex.get(key);
      if (s === undefined) {
        s = snippets.length;
        snippetIndex.set(key, s);
        snippets.push({ r: ri, paper: t.paper, file: t.file, snippet: t.snippet, loc: t.loc });
      }
      const snip = snippets[s];
      if (d.promptTail !== null && snip.prompt === undefined) {
        snip.prompt = headCut(d.promptTail, promptCap);
        snip.promptChars = d.promptTail.length;
        snip.prefixChars = d.promptPrefixChars;
        cut ||= snip.prompt.length < d.promptTail.length;
      }
      // The verdict line without its duration repeats across tasks: kept once, the seconds apart.
      const line = d.envBroken ? `env_broken: ${t.paper} cannot run here (${d.envBroken}); not run, out of the scores` : describeVerdict(d.verdict, judge);
      const seconds = / after (\d+\.\d\d)s /.exec(line);
      const row: ExploreRow = [
        s,
        run.modelIndex(t.model),
        t.sample,
        STATUSES.indexOf(detailStatus(d)),
        str(d.verdict?.failureClass ?? (d.passed || !d.verdict ? '' : 'integrity')),
        str(seconds ? line.replace(seconds[0], ' after {s}s ') : line),
        seconds ? seconds[1] : 0,
      ];
      const c = d.completion;
      let answer: string | 0 = 0;
      let answerChars = 0;
      let raw: string | 0 = 0;
      if (!c) row.push(str(d.verdict ? 'answer not recorded (imported results keep no answers)' : 'no answer yet (not generated)'));
      else if (c.error) row.push(str(`the model call failed: ${c.error.kind}${c.error.status ? ` ${c.error.status}` : ''}: ${c.error.message}`));
      else {
        row.push([c.usage.inputTokens, c.usage.outputTokens, Number(c.costUsd.toFixed(6)), str(c.finishReason)]);
        if (d.answer) {
          answer = headCut(d.answer, answerCap);
          answerChars = d.answer.length;
          cut ||= answer.length < d.answer.length;
        }
        if (full && d.answer !== c.text.trim() && c.text.trim()) raw = headCut(c.text, 20_000);
      }
      row.push(answer, answerChars, raw);
      let diff: string | 0 = 0;
      if (d.diff) {
        if (full) diff = d.diff;
        else cut = true;
      }
      row.push(diff);
      const v = d.verdict;
      if (v && v.executor !== 'none') {
        const o = tailCut(v.stdout.text, stdoutCap);
        const e = tailCut(v.stderr.text, stderrCap);
        row.push(o, v.stdout.totalBytes, e, v.stderr.totalBytes, v.stdout.truncated || v.stderr.truncated ? 1 : 0);
        cut ||= o.length < v.stdout.text.length || e.length < v.stderr.text.length;
      } else row.push(0, 0, 0, 0, 0);
      row.push(d.notes.length ? d.notes.map(str) : 0);
      while (row.length && row[row.length - 1] === 0) row.pop();
      tasks.push(row);
    }
  });
  return { runs: runs.map((r) => r.label), models, modelIds, judge, snippets, tasks, strings, cut };
}

/** A row read back with names: what the page shows of a task (the tests read the data this way). */
export function readRow(data: ExploreData, row: ExploreRow): ExploreTask {
  const at = (i: number) => row[i] ?? 0;
  return {
    s: at(0) as number,
    m: at(1) as number,
    k: at(2) as number,
    st: STATUSES[at(3) as number],
    c: data.strings[at(4) as number],
    v: data.strings[at(5) as number].replace('{s}', String(at(6))),
    answer: at(8) === 0 ? null : (at(8) as string),
    answerChars: at(9) as number,
    stdout: at(12) === 0 && at(13) === 0 ? null : ((at(12) || '') as string),
    stderr: at(12) === 0 && at(13) === 0 ? null : ((at(14) || '') as string),
  };
}

/** The failure classes the tasks hold. */
export function dataClasses(data: ExploreData): string[] {
  return [...new Set(data.tasks.map((r) => data.strings[(r[4] ?? 0) as number]).filter(Boolean))];
}

/** The data as a non-executed script block: `<` escaped so no text can close it. */
export function dataBlock(data: ExploreData): string {
  const json = JSON.stringify(data)
    .replace(/</g, '\\u003c')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
  return `<script type="application/json" id="rcb-data">${json}</script>`;
}

/** The papers' shared prompt prefixes, each cut to its share of the budget. */
export function cutPrefix(prefix: string, papers: number): { text: string; cut: boolean } {
  const cap = Math.floor(PREFIX_TEXT_BUDGET / Math.max(1, papers));
  return prefix.length > cap ? { text: prefix.slice(0, cap), cut: true } : { text: prefix, cut: false };
}

/** Case-insensitive order of names (papers, snippets), ties broken by the exact text. */
export function byName(a: string, b: string): number {
  return a.localeCompare(b, 'en', { sensitivity: 'base', numeric: true }) || (a < b ? -1 : a > b ? 1 : 0);
}

/** The filter bar above the task list. */
export function filterBar(models: string[], papers: string[], snippets: string[], classes: string[], esc: (s: string) => string): string {
  const opts = (xs: string[]) => xs.map((x) => `<option value="${esc(x)}">${esc(x)}</option>`).join('');
  return (
    '<div class="filters" id="filters">' +
    `<label>paper <select id="f-paper"><option value="">all</option>${opts(papers)}</select></label>` +
    `<label>snippet <input id="f-snippet" list="snippet-names" placeholder="any" size="18"></label><datalist id="snippet-names">${opts(snippets)}</datalist>` +
    `<label>model <select id="model-filter"><option value="">all</option>${opts(models)}</select></label>` +
    `<label>failure class <select id="f-class"><option value="">any</option>${opts(classes)}</select></label>` +
    `<label>status <select id="f-status"><option value="">any</option>${opts(['pass', 'fail', 'untested', 'env_broken'])}</select></label>` +
    '<label><input type="checkbox" id="failed-only"> only tasks not passing</label>' +
    '<button type="button" id="f-clear">clear filters</button> <span id="f-count" class="muted"></span></div>'
  );
}

/**
 * The page's only script, allowed by its hash in the content policy. It builds DOM nodes
 * with textContent from the data block; it never assigns markup.
 */
export const EXPLORE_SCRIPT = `
(function(){
'use strict';
var D=JSON.parse(document.getElementById('rcb-data').textContent);
var PAGE=200,STATUS=['pass','fail','untested','env_broken'];
function word(w){return /^[\\w@%+=:,.\\/-]+$/.test(w)?w:"'"+w.replace(/'/g,"'\\\\''")+"'";}
function row(r){var g=function(i){return r[i]===undefined?0:r[i];};var sn=D.snippets[g(0)],u=g(7);
  var t={s:g(0),m:g(1),k:g(2),st:STATUS[g(3)],c:D.strings[g(4)],v:D.strings[g(5)].replace('{s}',String(g(6)))};
  t.al=typeof u==='number'?D.strings[u]:u[0]+' input, '+u[1]+' output tokens, $'+u[2].toFixed(4)+', finish '+D.strings[u[3]];
  if(g(8)!==0){t.a=g(8);t.an=g(9);}else if(typeof u!=='number')t.al+='; no \u0060\u0060\u0060python block: the completion is empty';
  if(g(10)!==0)t.raw=g(10);if(g(11)!==0)t.d=g(11);
  if(g(12)!==0||g(13)!==0){t.o=g(12)||'';t.ob=g(13);t.e=g(14)||'';t.eb=g(15);t.lc=!!g(16);}
  t.n=g(17)||[];
  t.cmd=['rcb','show',word(D.runs[sn.r]),'--paper',word(sn.paper),'--snippet',word(sn.snippet),'--model',word(D.modelIds[t.m]),'--sample',String(t.k)].join(' ');
  return t;}
D.tasks=D.tasks.map(row);
function $(id){return document.getElementById(id);}
function el(tag,cls,text){var e=document.createElement(tag);if(cls)e.className=cls;if(text!==undefined&&text!==null)e.textContent=String(text);return e;}
function cmpText(a,b){return a.localeCompare(b,'en',{sensitivity:'base',numeric:true})||(a<b?-1:a>b?1:0);}
var order=D.tasks.map(function(_,i){return i;});
order.sort(function(i,j){var a=D.tasks[i],b=D.tasks[j],sa=D.snippets[a.s],sb=D.snippets[b.s];
  return cmpText(sa.paper,sb.paper)||cmpText(sa.snippet,sb.snippet)||(a.m-b.m)||(a.k-b.k)||(sa.r-sb.r);});
var F={paper:$('f-paper'),snippet:$('f-snippet'),model:$('model-filter'),cls:$('f-class'),status:$('f-status'),failed:$('failed-only')};
var list=$('task-list'),more=$('task-more'),count=$('f-count'),side=$('side-by-side');
var shown=PAGE;
var names={};D.snippets.forEach(function(s){names[s.snippet.toLowerCase()]=true;});
function match(t){
  var s=D.snippets[t.s];
  if(F.paper.value&&s.paper!==F.paper.value)return false;
  var q=F.snippet.value.trim().toLowerCase();
  if(q){var n=s.snippet.toLowerCase();if(names[q]?n!==q:n.indexOf(q)<0)return false;}
  if(F.model.value&&D.models[t.m]!==F.model.value)return false;
  if(F.cls.value&&t.c!==F.cls.value)return false;
  if(F.status.value&&t.st!==F.status.value)return false;
  if(F.failed.checked&&t.st==='pass')return false;
  return true;
}
function pre(cls,text){var p=el('pre',cls);p.textContent=text;return p;}
function cutNote(whole,kept,t,what){return el('p','note cut',what+': '+kept+' of '+whole+' characters shown; the whole with: '+t.cmd);}
function logBlock(name,text,bytes,t){
  var box=el('div');var h=el('h4',null,name+' ');
  h.appendChild(el('span','muted','('+bytes+' bytes'+(t.lc?', middle cut in the store':'')+')'));box.appendChild(h);
  box.appendChild(pre('log '+name,text||'(empty)'));
  return box;
}
function detailBody(t,box){
  var s=D.snippets[t.s];
  box.appendChild(el('p','verdict',t.v));
  var h=el('h4',null,'answer ');h.appendChild(el('span','muted','('+t.al+')'));box.appendChild(h);
  if(t.a!==undefined){box.appendChild(pre('answer',t.a));if(t.an>t.a.length)box.appendChild(cutNote(t.an,t.a.length,t,'answer'));}
  if(t.raw!==undefined){var r=el('details');r.appendChild(el('summary',null,'raw answer'));r.appendChild(pre('raw',t.raw));box.appendChild(r);}
  if(t.d!==undefined){box.appendChild(el('h4',null,'diff of the spliced file'));var p=el('pre','diff');
    t.d.replace(/\\n$/,'').split('\\n').forEach(function(l){var c=l.indexOf('@@')===0?'hunk':(l[0]==='+'&&l.indexOf('+++')!==0)?'add':(l[0]==='-'&&l.indexOf('---')!==0)?'del':'';
      var sp=el('span',c,l+(c?'':'\\n'));p.appendChild(sp);});box.appendChild(p);}
  if(t.o!==undefined){box.appendChild(logBlock('stdout',t.o,t.ob,t));box.appendChild(logBlock('stderr',t.e,t.eb,t));}
  if(D.cut&&(t.d===undefined&&t.a!==undefined||t.o!==undefined))box.appendChild(el('p','note','this page keeps a part of each long text; the whole task (answer, diff, both logs): '+t.cmd));
  if(s.prompt!==undefined){var pd=el('details','prompt');pd.appendChild(el('summary',null,'prompt'));
    pd.appendChild(el('p','note','The first '+s.prefixChars+' characters (instructions and paper) are the paper\\'s shared prefix, under prompt prefixes; then:'));
    pd.appendChild(pre('prompt-tail',s.prompt));
    if(s.promptChars>s.prompt.length)pd.appendChild(el('p','note cut','prompt: '+s.prompt.length+' of '+s.promptChars+' characters shown; the whole with: '+t.cmd+' --prompt'));
    box.appendChild(pd);}
  t.n.forEach(function(i){box.appendChild(el('p','note',D.strings[i]));});
}
function taskNode(t){
  var s=D.snippets[t.s],d=el('details','task '+t.st);
  d.setAttribute('data-model',D.models[t.m]);d.setAttribute('data-paper',s.paper);d.setAttribute('data-snippet',s.snippet);
  d.setAttribute('data-sample',String(t.k));d.setAttribute('data-status',t.st);d.setAttribute('data-class',t.c);
  var sum=el('summary');sum.appendChild(el('span','badge '+t.st,t.st));
  sum.appendChild(document.createTextNode(s.paper+' / '));sum.appendChild(el('b',null,s.snippet));
  sum.appendChild(el('span','muted',' '+s.file+', '+s.loc+' LoC'));
  sum.appendChild(document.createTextNode(' \\u00b7 '+D.models[t.m]+(t.k?' \\u00b7 sample '+t.k:'')+(D.runs.length>1?' \\u00b7 '+D.runs[s.r]:'')));
  if(t.c)sum.appendChild(el('span','muted',' \\u00b7 '+t.c));
  d.appendChild(sum);detailBody(t,d);
  return d;
}
function sideBySide(hits){
  while(side.firstChild)side.removeChild(side.firstChild);
  if(!hits.length)return;
  var s0=hits[0].s;
  for(var i=1;i<hits.length;i++)if(hits[i].s!==s0)return;
  var ms={};hits.forEach(function(t){ms[t.m]=1;});
  if(Object.keys(ms).length<2)return;
  var s=D.snippets[s0];
  side.appendChild(el('h3',null,'Side by side: '+s.paper+' / '+s.snippet+' ('+s.file+', '+s.loc+' LoC)'));
  var grid=el('div','cards');
  hits.slice(0,64).forEach(function(t){var c=el('div','card '+t.st);c.setAttribute('data-model',D.models[t.m]);
    var h=el('div','card-head');h.appendChild(el('span','badge '+t.st,t.st));h.appendChild(el('b',null,D.models[t.m]+(t.k?' #'+t.k:'')));if(t.c)h.appendChild(el('span','muted',' '+t.c));
    c.appendChild(h);c.appendChild(pre('answer',t.a!==undefined?t.a:t.al));grid.appendChild(c);});
  side.appendChild(grid);
}
function apply(keep){
  if(!keep)shown=PAGE;
  var hits=[];order.forEach(function(i){if(match(D.tasks[i]))hits.push(D.tasks[i]);});
  while(list.firstChild)list.removeChild(list.firstChild);
  var frag=document.createDocumentFragment();
  hits.slice(0,shown).forEach(function(t){frag.appendChild(taskNode(t));});
  list.appendChild(frag);
  count.textContent=hits.length+' of '+D.tasks.length+' task sample(s)'+(hits.length>shown?', first '+shown+' listed':'');
  more.hidden=hits.length<=shown;more.textContent='list '+Math.min(PAGE,hits.length-shown)+' more';
  sideBySide(hits);
}
[F.paper,F.model,F.cls,F.status,F.failed].forEach(function(x){x.addEventListener('change',function(){apply();});});
F.snippet.addEventListener('input',function(){apply();});
more.addEventListener('click',function(){shown+=PAGE;apply(true);});
$('f-clear').addEventListener('click',function(){F.paper.value=F.snippet.value=F.model.value=F.cls.value=F.status.value='';F.failed.checked=false;apply();});
function setSelect(sel,v){sel.value=v||'';if(sel.value!==(v||''))sel.value='';}
document.addEventListener('click',function(ev){
  var a=ev.target&&ev.target.closest?ev.target.closest('[data-go]'):null;if(!a)return;
  setSelect(F.paper,a.getAttribute('data-f-paper'));setSelect(F.model,a.getAttribute('data-f-model'));
  setSelect(F.cls,a.getAttribute('data-f-class'));setSelect(F.status,a.getAttribute('data-f-status'));
  F.snippet.value=a.getAttribute('data-f-snippet')||'';F.failed.checked=false;apply();
  ev.preventDefault();$('s-tasks').scrollIntoView();
});
function matrix(){
  var host=$('task-matrix');if(!host)return;
  var t=el('table','sortable matrix');t.id='matrix';var th=el('thead'),hr=el('tr');
  ['paper','snippet','LoC'].concat(D.models).forEach(function(n,i){var h=el('th',i===2||i>2?'num':null,n);if(i>2)h.setAttribute('data-model',n);hr.appendChild(h);});
  th.appendChild(hr);t.appendChild(th);
  var cells={};D.tasks.forEach(function(x){var k=x.s+':'+x.m;var c=cells[k]||(cells[k]={p:0,n:0,u:0});if(x.st==='pass')c.p++;if(x.st==='untested'||x.st==='env_broken')c.u++;c.n++;});
  var rows=D.snippets.map(function(_,i){return i;}).sort(function(i,j){var a=D.snippets[i],b=D.snippets[j];return cmpText(a.paper,b.paper)||cmpText(a.snippet,b.snippet)||a.r-b.r;});
  var tb=el('tbody');
  rows.forEach(function(si){var s=D.snippets[si],tr=el('tr');
    tr.appendChild(el('td',null,s.paper));var sn=el('td');var a=el('a','go',s.snippet);a.href='#s-tasks';a.setAttribute('data-go','');a.setAttribute('data-f-paper',s.paper);a.setAttribute('data-f-snippet',s.snippet);sn.appendChild(a);tr.appendChild(sn);
    tr.appendChild(el('td','num',s.loc));
    D.models.forEach(function(m,mi){var c=cells[si+':'+mi],td=el('td','num mx');
      if(c){var judged=c.n-c.u;td.textContent=judged?c.p+'/'+judged:'\\u2013';td.setAttribute('data-v',judged?String(c.p/judged):'-1');
        td.className+=' '+(!judged?'untested':c.p===judged?'pass':c.p?'part':'fail');
        td.setAttribute('data-go','');td.setAttribute('data-f-paper',s.paper);td.setAttribute('data-f-snippet',s.snippet);td.setAttribute('data-f-model',m);td.title=m+' on '+s.snippet;}
      tr.appendChild(td);});
    tb.appendChild(tr);});
  t.appendChild(tb);host.appendChild(t);
}
function sortable(table){
  var head=table.tHead;if(!head)return;var ths=head.rows[head.rows.length-1].cells;
  Array.prototype.forEach.call(ths,function(th,col){th.classList.add('sort');th.tabIndex=0;
    function go(){var dir=th.getAttribute('aria-sort')==='ascending'?-1:1;
      Array.prototype.forEach.call(ths,function(h){h.removeAttribute('aria-sort');});th.setAttribute('aria-sort',dir>0?'ascending':'descending');
      var body=table.tBodies[0];var rs=Array.prototype.slice.call(body.rows);
      function key(r){var c=r.cells[col];if(!c)return '';var v=c.getAttribute('data-v');return v!==null?v:c.textContent.trim();}
      rs.sort(function(a,b){var x=key(a),y=key(b),nx=parseFloat(x.replace(/^\\$/,'')),ny=parseFloat(y.replace(/^\\$/,''));
        var bothNum=!isNaN(nx)&&!isNaN(ny)&&/^[-$\\d.]/.test(x)&&/^[-$\\d.]/.test(y);
        return dir*(bothNum?nx-ny:cmpText(x,y));});
      rs.forEach(function(r){body.appendChild(r);});}
    th.addEventListener('click',go);th.addEventListener('keydown',function(e){if(e.key==='Enter')go();});});
}
matrix();
document.querySelectorAll('table.sortable').forEach(sortable);
apply();
})();`;
