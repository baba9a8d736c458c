// Predict-then-reveal (hooks/predict.py writes the forms): the reader picks a choice and checks it; the page shows
// that choice's explanation. Answers stay in this browser (localStorage), by question id, so both languages share
// them: the first choice checked counts for the chapter's score, a later one only shows its explanation.
(() => {
  const KEY = "attention-docs:predictions";
  const load = () => {
    try {
      return JSON.parse(localStorage.getItem(KEY)) || {};
    } catch {
      return {}; // storage off or unreadable: the questions still work, for this visit
    }
  };
  const save = (answers) => {
    try {
      localStorage.setItem(KEY, JSON.stringify(answers));
    } catch {
      // private mode or quota: nothing kept, nothing lost on this page
    }
  };
  const fill = (text, values) => text.replace(/\{(\w+)\}/g, (_, name) => values[name]);
  const forms = [...document.querySelectorAll("form[data-predict]")];
  const summary = document.querySelector("[data-predict-summary]");

  function count() {
    if (!summary || !forms.length) return;
    const answers = load();
    const words = JSON.parse(forms[0].dataset.strings);
    const mine = forms.map((form) => answers[form.dataset.predict]).filter(Boolean);
    const right = forms.filter((form) => answers[form.dataset.predict]?.first === form.dataset.answer).length;
    const left = forms.length - mine.length;
    summary.hidden = mine.length === 0;
    summary.dataset.right = right;
    summary.dataset.answered = mine.length;
    summary.dataset.total = forms.length;
    summary.textContent = [
      fill(words.summary, { right, total: forms.length }),
      left ? fill(words.unanswered, { left }) : "",
      words.kept,
    ].filter(Boolean).join(words.space);
  }

  function show(form, choice) {
    const words = JSON.parse(form.dataset.strings);
    const verdict = form.querySelector(".pr-verdict");
    for (const why of form.querySelectorAll(".pr-why")) why.hidden = why.dataset.choice !== choice;
    for (const label of form.querySelectorAll(".pr-choice")) {
      const input = label.querySelector("input");
      if (input.value === choice) label.dataset.verdict = choice === form.dataset.answer ? "right" : "wrong";
      else delete label.dataset.verdict;
    }
    if (choice === null) {
      form.dataset.state = "open";
      verdict.textContent = "";
      form.querySelector(".pr-forget").hidden = !load()[form.dataset.predict];
      return;
    }
    const right = choice === form.dataset.answer;
    form.dataset.state = right ? "right" : "wrong";
    form.dataset.chosen = choice;
    verdict.textContent = `${right ? "\u2713" : "\u2717"} ${right ? words.right : words.wrong}`;
    form.querySelector(".pr-forget").hidden = false;
  }

  for (const form of forms) {
    const words = JSON.parse(form.dataset.strings);
    const id = form.dataset.predict;
    form.querySelector(".pr-check").textContent = words.check;
    form.querySelector(".pr-forget").textContent = words.forget;
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const picked = form.querySelector("input:checked");
      if (!picked) {
        show(form, null);
        form.dataset.state = "unpicked";
        form.querySelector(".pr-verdict").textContent = words.pick;
        return;
      }
      const answers = load();
      answers[id] = { first: answers[id]?.first ?? picked.value, last: picked.value };
      save(answers);
      show(form, picked.value);
      count();
    });
    // A verdict is about the choice it names: picking another one clears it until that one is checked.
    form.addEventListener("change", () => {
      delete form.dataset.chosen;
      show(form, null);
    });
    form.querySelector(".pr-forget").addEventListener("click", () => {
      const answers = load();
      delete answers[id];
      save(answers);
      for (const input of form.querySelectorAll("input")) input.checked = false;
      delete form.dataset.chosen;
      show(form, null);
      count();
      form.querySelector("input").focus();
    });
    const stored = load()[id];
    if (stored && form.querySelector(`input[value="${stored.last}"]`)) {
      form.querySelector(`input[value="${stored.last}"]`).checked = true;
      show(form, stored.last);
    } else {
      show(form, null);
    }
  }
  count();
})();
