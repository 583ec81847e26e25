export default { printWidth: 100 };
