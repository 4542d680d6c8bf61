// The only script: after an action, move focus to its "Done" note so a screen reader says it.
document.addEventListener("DOMContentLoaded", () => {
  const done = document.querySelector(".done");
  if (done) {
    done.setAttribute("tabindex", "-1");
    done.focus();
  }
});
